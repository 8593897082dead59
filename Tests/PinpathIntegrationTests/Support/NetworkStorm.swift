import Foundation
import PinpathTestSupport

/// The network-fault storm of issue 6, on a `TestNetwork(ipv6: true)`, for a fixed time:
///
/// - the host's uplink flaps every 100 ms: mostly its carrier (the peer `pb0` goes down and up in the
///   gateway namespace), and once a second `pa0` itself goes administratively down and up, which takes its
///   IPv4 routes with it without an RTM_DELROUTE and its IPv6 addresses with it, both put back at once;
/// - at the same time, addresses and routes on `pa0` are churned through `ip -batch` at `churnRate`
///   commands a second: IPv4 and IPv6 addresses, host routes, and the routes of the watched targets, whose
///   type keeps changing (via the gateway, blackhole, unreachable, prohibit, or none).
///
/// Each driver runs on a thread of its own, so that a churn driver blocked on a busy `ip` never delays a flap.
final class NetworkStorm: Sendable {
    /// What was done, for the test's figures.
    struct Report: CustomStringConvertible {
        var flaps = 0
        var carrierFlaps = 0
        var adminFlaps = 0
        var churnCommands = 0
        var churnFailures = 0
        var flapFailures = 0
        var churnSeconds = 0.0
        var churnRate: Double { churnSeconds > 0 ? Double(churnCommands) / churnSeconds : 0 }

        var description: String {
            let rate = String(format: "%.0f", churnRate)
            return "\(flaps) flaps (\(carrierFlaps) carrier, \(adminFlaps) admin; \(flapFailures) refused), "
                + "\(churnCommands) churn commands in \(String(format: "%.1f", churnSeconds)) s = \(rate)/s "
                + "(\(churnFailures) refused by the kernel)"
        }
    }

    /// The targets whose routes the churn rewrites.
    static let churnedTargets = ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "198.51.100.7"]
    static let flapInterval: Duration = .milliseconds(100)

    let host: String
    let gateway: String
    let duration: Duration
    let churnRate: Int
    let seed: UInt64
    private let directory: String

    init(network: TestNetwork, duration: Duration, churnRate: Int, seed: UInt64, directory: String) {
        host = network.host
        gateway = network.gateway
        self.duration = duration
        self.churnRate = churnRate
        self.seed = seed
        self.directory = directory
    }

    /// Runs the storm to its end; returns what was done.
    func run() async throws -> Report {
        let gatewayBatch = try BatchProcess(namespace: gateway, errorFile: "\(directory)/flap-gateway.err")
        let hostFlapBatch = try BatchProcess(namespace: host, errorFile: "\(directory)/flap-host.err")
        let churnBatch = try BatchProcess(namespace: host, errorFile: "\(directory)/churn.err")
        let deadline = ContinuousClock.now + duration
        async let flapped = onThread("pp-storm-flap") { self.flap(gateway: gatewayBatch, host: hostFlapBatch, until: deadline) }
        async let churned = onThread("pp-storm-churn") { self.churn(churnBatch, until: deadline) }
        var report = await flapped
        let churnReport = await churned
        report.churnCommands = churnReport.churnCommands
        report.churnSeconds = churnReport.churnSeconds
        report.flapFailures = gatewayBatch.finish().failures + hostFlapBatch.finish().failures
        report.churnFailures = churnBatch.finish().failures
        return report
    }

    /// One flap every 100 ms. Of every ten: eight toggle the peer (carrier lost, regained), then `pa0` goes
    /// down and comes back up with its IPv6 address and both default routes restored, as a DHCP client or
    /// networkd would.
    private func flap(gateway: BatchProcess, host: BatchProcess, until deadline: ContinuousClock.Instant) -> Report {
        var report = Report()
        var next = ContinuousClock.now
        var count = 0
        while ContinuousClock.now < deadline {
            let step = count % 10
            switch step {
            case 0..<8:
                gateway.send("link set pb0 \(step % 2 == 0 ? "down" : "up")\n")
            case 8:
                host.send("link set pa0 down\n")
            default:
                host.send(
                    """
                    link set pa0 up
                    addr add \(TestNetwork.hostAddress6)/64 dev pa0 nodad
                    route replace default via \(TestNetwork.gatewayAddress)
                    route replace default via \(TestNetwork.gatewayAddress6)

                    """)
            }
            count += 1
            report.flaps += 1
            if step < 8 { report.carrierFlaps += 1 } else { report.adminFlaps += 1 }
            next += Self.flapInterval
            sleepUntil(next)
        }
        return report
    }

    /// Churn commands in 10 ms slices at `churnRate` a second. A slice that `ip` has not taken yet holds
    /// the next back, so the rate reported is the one the kernel actually absorbed.
    private func churn(_ batch: BatchProcess, until deadline: ContinuousClock.Instant) -> Report {
        var plan = ChurnPlan(seed: seed)
        let start = ContinuousClock.now
        var sent = 0
        while ContinuousClock.now < deadline {
            let elapsed = (ContinuousClock.now - start) / .seconds(1)
            let due = Int(elapsed * Double(churnRate)) + churnRate / 100
            guard due > sent else {
                sleepUntil(ContinuousClock.now + .milliseconds(10))
                continue
            }
            var lines = ""
            for _ in sent..<due { lines += plan.next() + "\n" }
            guard batch.send(lines) else { break }
            sent = due
        }
        return Report(churnCommands: sent, churnSeconds: (ContinuousClock.now - start) / .seconds(1))
    }

    private func sleepUntil(_ instant: ContinuousClock.Instant) {
        let remaining = instant - ContinuousClock.now
        guard remaining > .zero else { return }
        usleep(UInt32(remaining / .microseconds(1)))
    }
}

/// Runs blocking work on a thread of its own (not the cooperative pool, which the test's own tasks need).
func onThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.name = name
        thread.start()
    }
}

/// The churn's commands: a seeded random walk over pools of addresses and routes, each command toggling
/// one of them (add if absent, delete if present, as far as the plan knows: an admin flap removes some
/// behind its back, and the kernel then refuses the next command on them, which `ip -force` survives).
struct ChurnPlan {
    private var random: SplitMix64
    private var present = Set<String>()

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func next() -> String {
        let roll = random.next(below: 100)
        let index = random.next(below: 512)
        switch roll {
        case 0..<30:
            return toggle(
                "a4 \(index)", add: "addr add \(Self.ipv4(10, 100, index))/32 dev pa0",
                delete: "addr del \(Self.ipv4(10, 100, index))/32 dev pa0")
        case 30..<50:
            let address = "fd00:100::\(String(index + 1, radix: 16))/128"
            return toggle("a6 \(index)", add: "addr add \(address) dev pa0 nodad", delete: "addr del \(address) dev pa0")
        case 50..<75:
            let prefix = "\(Self.ipv4(10, 201, index))/32"
            return toggle("r4 \(index)", add: "route add \(prefix) via \(TestNetwork.gatewayAddress)", delete: "route del \(prefix)")
        case 75..<85:
            let prefix = "fd00:201::\(String(index + 1, radix: 16))/128"
            return toggle("r6 \(index)", add: "route add \(prefix) via \(TestNetwork.gatewayAddress6)", delete: "route del \(prefix)")
        default:
            let target = NetworkStorm.churnedTargets[random.next(below: NetworkStorm.churnedTargets.count)]
            switch random.next(below: 5) {
            case 0: return "route replace \(target)/32 via \(TestNetwork.gatewayAddress)"
            case 1: return "route replace blackhole \(target)/32"
            case 2: return "route replace unreachable \(target)/32"
            case 3: return "route replace prohibit \(target)/32"
            default: return "route del \(target)/32"
            }
        }
    }

    private mutating func toggle(_ key: String, add: String, delete: String) -> String {
        present.remove(key) != nil ? delete : (present.insert(key), add).1
    }

    private static func ipv4(_ first: Int, _ second: Int, _ index: Int) -> String {
        "\(first).\(second).\(index / 250).\(index % 250 + 1)"
    }
}

/// A small seedable generator, so that a failing storm can be replayed with the seed it printed.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
