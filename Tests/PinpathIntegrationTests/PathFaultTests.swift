import Foundation
import PinpathTestSupport
import Testing

/// The hostile kit's network-level cases, beyond a veth instead of on loopback: servers whose packets the
/// gateway namespace drops or refuses. Probed by `pinpath run --once` in the host namespace, through
/// `Session` and its reachability gate, which lets each one through (the host has a default route).
@Suite("Hostile paths beyond the veth", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct PathFaultTests {
    static let port = 8080
    static let timeout: Duration = .seconds(2)

    /// Each endpoint, the gateway's treatment of it, the category its probe must end with, and what its
    /// message must say (the two `connect_failed` cases are told apart by the socket's error). libcurl words a
    /// connect timeout two ways, "Connection timed out after 2000 milliseconds" or "Connection timeout after
    /// 1998 ms", depending on which of its timers fires first: both start "Connection time".
    static let cases: [(name: String, address: String, category: String?, message: String?)] = [
        ("control", "198.51.100.7", nil, nil),  // a plain HTTP server: the set-up works
        ("syn-ack-dropped", "198.51.100.20", "timed_out", "Connection time"),  // listening, but its replies are blackholed
        ("syn-dropped", "198.51.100.23", "timed_out", "Connection time"),  // a blackhole route in the gateway: no answer
        ("icmp-unreachable", "198.51.100.21", "connect_failed", "No route to host"),  // ICMP host unreachable
        ("reset", "198.51.100.22", "connect_failed", "Connection refused"),  // the gateway's address, no listener: RST
    ]

    @Test("A dropped SYN-ACK or SYN ends as timeout, an ICMP unreachable or a reset as connect_failed, within the timeout")
    func droppedAndRefused() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.batch(
            network.gateway,
            """
            addr add 198.51.100.7/32 dev lo
            addr add 198.51.100.20/32 dev lo
            addr add 198.51.100.22/32 dev lo
            route add blackhole 198.51.100.23/32
            route add unreachable 198.51.100.21/32
            """)
        // Forwarding on, so that packets for addresses the gateway does not own meet its routes (and the
        // unreachable route answers with ICMP) instead of being dropped unseen.
        try Shell.check(["ip", "netns", "exec", network.gateway, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        for address in ["198.51.100.7", "198.51.100.20"] {
            try network.spawn(in: network.gateway, ["python3", "-m", "http.server", "--bind", address, "\(Self.port)"])
            try network.waitForListener(in: network.gateway, address, Self.port)
        }
        // Replies from 198.51.100.20 to anything not local go to a table that blackholes them: the SYN
        // arrives and is answered, and the SYN-ACK is dropped on its way out.
        try network.batch(network.gateway, "rule add from 198.51.100.20 table 100 pref 100\nroute add blackhole default table 100")

        let directory = "\(TestPKI.shared.directory)/pathfault-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/pinpath.yaml"
        let output = "\(directory)/events.jsonl"
        let endpoints = Self.cases.map { "  - { name: \($0.name), url: \"http://\($0.address):\(Self.port)/\", timeout: 2s }" }
        try "events: { output: stdout, probes: all }\nendpoints:\n\(endpoints.joined(separator: "\n"))\n"
            .write(toFile: config, atomically: true, encoding: .utf8)

        for run in 1...3 {
            let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            let started = ContinuousClock.now
            let agent = try Shell.spawn(
                ["ip", "netns", "exec", network.host, Shell.pinpath, "run", "--once", "--config", config], stdout: descriptor)
            close(descriptor)
            let status = try await Shell.stop(agent, signal: 0, timeout: Self.timeout + .seconds(5))
            let elapsed = ContinuousClock.now - started
            #expect(status == 1, "exit 1: not every endpoint is up (nil: still running after the timeout and 5 s)")
            // Every probe ends within its timeout; the rest is starting and stopping the agent.
            #expect(elapsed < Self.timeout + .seconds(2), "run --once took \(elapsed)")

            let events = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").compactMap {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            let probes = events.filter { $0["event"] as? String == "probe.completed" }
            #expect(probes.count == Self.cases.count)
            var outcomes: [String] = []
            for (name, _, category, message) in Self.cases {
                let probe = try #require(probes.first { $0["endpoint"] as? String == name }, "no probe.completed for \(name)")
                #expect(probe["error_category"] as? String == category, "\(name): \(probe["message"] ?? "")")
                #expect((probe["message"] as? String)?.contains(message ?? "") ?? (message == nil), "\(name): \(probe["message"] ?? "")")
                #expect((probe["outcome"] as? String == "success") == (category == nil), "\(name)")
                outcomes.append("\(name): \(probe["error_category"] as? String ?? "success") (\(probe["message"] as? String ?? "200"))")
            }
            print("run \(run): exit \(status.map(String.init) ?? "none") after \(elapsed); " + outcomes.joined(separator: "; "))
        }
    }
}
