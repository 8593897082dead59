import Foundation
import PinpathReachability
import PinpathTestSupport
import Synchronization
import Testing

/// The monitor against the real kernel: each test builds its own namespaces, scripts them with `ip`, and
/// checks the events and the final snapshot against what the kernel reports.
@Suite("Reachability monitor on the kernel", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct MonitorTests {
    static let offLink = "192.0.2.1"  // TEST-NET-1: routed by the default route

    func start(_ network: TestNetwork, targets: [String] = [], receiveBufferSize: Int = 8 << 20) async throws
        -> ReachabilityMonitor
    {
        try await ReachabilityMonitor.start(
            .init(networkNamespace: network.host, receiveBufferSize: receiveBufferSize, resolutionTimeout: .seconds(2)),
            targets: targets.map { try ReachabilityTarget(parsing: $0) })
    }

    /// Starts a monitor on `network` and a recorder that has already seen the initial state.
    func recorded(_ network: TestNetwork, targets: [String] = []) async throws -> (ReachabilityMonitor, EventRecorder) {
        let monitor = try await start(network, targets: targets)
        let recorder = EventRecorder(monitor)
        try await recorder.waitForPath(after: 0)
        return (monitor, recorder)
    }

    @Test("The first snapshot is complete when start returns, and is the first event")
    func initialSnapshot() async throws {
        let network = try TestNetwork()
        let monitor = try await start(network, targets: [Self.offLink, "nonexistent.invalid"])
        defer { monitor.stop() }
        let path = monitor.currentPath
        #expect(path.status == .reachable)
        #expect(path.primaryInterface?.name == "pa0")
        #expect(path.primaryInterface?.kind == .other, "veth is virtual")
        #expect(path.ipv4?.gateway?.description == TestNetwork.gatewayAddress)
        #expect(path.ipv4?.source?.description == TestNetwork.hostAddress)
        #expect(path.ipv6 == nil)
        #expect(path.interfaces.map(\.name) == (try network.json(network.host, "link show")).compactMap { $0["ifname"] as? String })
        #expect(path.interfaces.first { $0.name == "lo" }?.kind == .loopback)
        #expect(path.interfaces.first { $0.name == "pa0" }?.addresses.map(\.description).contains("10.99.0.1/24") == true)
        #expect(path.target(Self.offLink)?.status == .reachable)
        #expect(path.target(Self.offLink)?.interfaceName == "pa0")
        #expect(path.target("nonexistent.invalid")?.reason == .dnsFailed)

        let recorder = EventRecorder(monitor)
        let first = try await recorder.waitForPath(after: 0)
        #expect(first.reason == .initial && first.previous == nil && first.path == path)
        try await recorder.waitForTarget("nonexistent.invalid", after: 0)
        #expect(recorder.targetChanges(Self.offLink).first?.reason == .initial)
    }

    @Test("Carrier lost through the peer and regained")
    func carrier() async throws {
        let network = try TestNetwork()
        let (monitor, recorder) = try await recorded(network, targets: [Self.offLink])
        defer { monitor.stop() }

        try network.ip(network.gateway, "link set pb0 down")
        let lost = try await recorder.waitForPath(after: 1)
        #expect(lost.reason == .carrierLost)
        #expect(lost.path.status == .unreachable && lost.previous?.status == .reachable)
        #expect(lost.path.ipv4 == nil && lost.path.primaryInterface == nil)
        #expect(lost.path.interfaces.first { $0.name == "pa0" }?.hasCarrier == false)
        let target = try await recorder.waitForTarget(Self.offLink, after: 1)
        #expect(target.target.status == .unreachable && target.target.reason == .noCarrier && target.reason == .carrierLost)

        try network.ip(network.gateway, "link set pb0 up")
        let regained = try await recorder.waitForPath(after: 2)
        #expect(regained.reason == .carrierGained && regained.path.status == .reachable)
        #expect(regained.path.primaryInterface?.name == "pa0")
        try await recorder.waitForTarget(Self.offLink, after: 2) { $0.target.status == .reachable }

        try await Task.sleep(for: .milliseconds(200))
        #expect(recorder.pathChanges.map(\.reason) == [.initial, .carrierLost, .carrierGained], "no duplicates")
    }

    @Test("Admin down drops IPv4 routes without a delete message; the snapshot follows the kernel")
    func adminDown() async throws {
        let network = try TestNetwork()
        let (monitor, recorder) = try await recorded(network)
        defer { monitor.stop() }

        try network.ip(network.host, "link set pa0 down")
        let down = try await recorder.waitForPath(after: 1)
        #expect(down.reason == .linkDown && down.path.status == .unreachable)
        #expect(down.path.interfaces.first { $0.name == "pa0" }?.isAdminUp == false)

        try network.ip(network.host, "link set pa0 up")
        #expect(try await eventually { monitor.currentPath.interfaces.first { $0.name == "pa0" }?.hasCarrier == true })
        #expect(try network.json(network.host, "route show default").isEmpty, "the kernel dropped the default route")
        #expect(monitor.currentPath.status == .unreachable, "carrier is back but there is no route")
        #expect(recorder.pathChanges.count == 2)

        try network.ip(network.host, "route add default via \(TestNetwork.gatewayAddress)")
        let back = try await recorder.waitForPath(after: 2)
        #expect(back.reason == .routeAdded && back.path.status == .reachable && back.path.primaryInterface?.name == "pa0")
    }

    @Test("Removing the address takes the path with it; restoring address and route brings it back")
    func addressRemoval() async throws {
        let network = try TestNetwork()
        let (monitor, recorder) = try await recorded(network)
        defer { monitor.stop() }

        try network.ip(network.host, "addr del \(TestNetwork.hostAddress)/24 dev pa0")
        let removed = try await recorder.waitForPath(after: 1)
        #expect(removed.reason == .addressRemoved && removed.path.status == .unreachable)
        #expect(removed.path.interfaces.first { $0.name == "pa0" }?.addresses.isEmpty == true)

        try network.ip(network.host, "addr add \(TestNetwork.hostAddress)/24 dev pa0")
        try network.ip(network.host, "route add default via \(TestNetwork.gatewayAddress)")
        let restored = try await recorder.waitForPath(after: 2)
        #expect(restored.path.status == .reachable)
        #expect([.addressAdded, .routeAdded].contains(restored.reason))
    }

    @Test("Default route removed and restored")
    func defaultRoute() async throws {
        let network = try TestNetwork()
        let (monitor, recorder) = try await recorded(network, targets: [Self.offLink, TestNetwork.gatewayAddress])
        defer { monitor.stop() }

        try network.ip(network.host, "route del default")
        let removed = try await recorder.waitForPath(after: 1)
        #expect(removed.reason == .routeRemoved && removed.path.status == .unreachable && removed.path.gateways.isEmpty)
        let target = try await recorder.waitForTarget(Self.offLink, after: 1)
        #expect(target.target.reason == .noRoute && target.reason == .routeRemoved)
        #expect(monitor.currentPath.target(TestNetwork.gatewayAddress)?.status == .reachable, "on-link still reachable")
        #expect(recorder.targetChanges(TestNetwork.gatewayAddress).count == 1, "no event for a target that did not change")

        try network.ip(network.host, "route add default via \(TestNetwork.gatewayAddress)")
        let added = try await recorder.waitForPath(after: 2)
        #expect(added.reason == .routeAdded && added.path.status == .reachable)
    }

    @Test("A wg-quick-style policy rule moves the default path to the VPN's table")
    func policyRouting() async throws {
        let network = try TestNetwork()
        let (monitor, recorder) = try await recorded(network, targets: [Self.offLink, TestNetwork.gatewayAddress])
        defer { monitor.stop() }

        // A real tun device (kind "tun", so vpn), held open by a helper so that it has carrier.
        try network.spawn(in: network.host, ["python3", "-c", TunHolder.script, "tun0"])
        #expect(try await eventually { (try? network.json(network.host, "link show dev tun0"))?.isEmpty == false })
        try network.batch(network.host, "addr add 10.200.0.2/32 dev tun0\nlink set tun0 up\nroute add default dev tun0 table 51820")
        #expect(
            try await eventually {
                monitor.currentPath.interfaces.first { $0.name == "tun0" }.map { $0.hasCarrier && !$0.addresses.isEmpty } == true
            })
        #expect(monitor.currentPath.primaryInterface?.name == "pa0", "a default route in another table changes nothing yet")
        #expect(recorder.pathChanges.count == 1)

        try network.batch(network.host, "rule add not fwmark 51820 table 51820\nrule add table main suppress_prefixlength 0")
        let moved = try await recorder.waitForPath(after: 1)
        #expect(moved.path.primaryInterface?.name == "tun0")
        #expect(moved.path.primaryInterface?.kind == .vpn)
        #expect(moved.path.ipv4?.table == 51820)
        #expect(moved.reason == .ruleChanged)
        try await recorder.waitForTarget(Self.offLink, after: 1) { $0.target.interfaceName == "tun0" }
        // The two rules arrive as two netlink messages: between them table 51820 takes every address, the gateway's
        // too, so the verdict settles on the main table's connected route only after the second.
        #expect(
            try await eventually { monitor.currentPath.target(TestNetwork.gatewayAddress)?.interfaceName == "pa0" },
            "the main table's connected route wins")

        try network.batch(network.host, "rule del not fwmark 51820 table 51820\nrule del table main suppress_prefixlength 0")
        let back = try await recorder.waitForPath(after: 2)
        #expect(back.path.primaryInterface?.name == "pa0")
        #expect(back.reason == .ruleChanged)
    }

    @Test("Blackhole, unreachable and prohibit routes make a target unreachable with their own reason")
    func rejectingRoutes() async throws {
        let network = try TestNetwork()
        let monitor = try await start(network, targets: [Self.offLink])
        defer { monitor.stop() }
        let recorder = EventRecorder(monitor)
        try await recorder.waitForTarget(Self.offLink, after: 0)

        try network.ip(network.host, "route add blackhole 192.0.2.0/24")
        let blackholed = try await recorder.waitForTarget(Self.offLink, after: 1)
        #expect(blackholed.target.status == .unreachable && blackholed.target.reason == .blackholeRoute)
        #expect(blackholed.reason == .routeAdded)
        #expect(monitor.currentPath.status == .reachable && recorder.pathChanges.count == 1, "the default path is untouched")

        let target = try ReachabilityTarget(parsing: Self.offLink)
        for (kind, reason) in [("unreachable", UnreachableReason.unreachableRoute), ("prohibit", .prohibitedRoute)] {
            try network.ip(network.host, "route replace \(kind) 192.0.2.0/24")
            #expect(try await eventually { monitor.currentPath.target(Self.offLink)?.reason == reason })
            #expect(try await monitor.reachability(of: target).reason == reason)
        }
        #expect(recorder.targetChanges(Self.offLink).count == 2, "the status did not change, so no event")

        try network.ip(network.host, "route del 192.0.2.0/24")
        let clear = try await recorder.waitForTarget(Self.offLink, after: 2)
        #expect(clear.target.status == .reachable && clear.reason == .routeRemoved)
    }

    @Test("An interface deleted and re-created with the same name")
    func recreateInterface() async throws {
        let network = try TestNetwork()
        let monitor = try await start(network)
        defer { monitor.stop() }
        let recorder = EventRecorder(monitor)
        let initial = try await recorder.waitForPath(after: 0)
        let oldIndex = try #require(initial.path.primaryInterface?.index)

        try network.ip(network.host, "link del pa0")
        // Deleting a link first takes it down, and the kernel says so in its own message, which may be
        // read before the deletion arrives.
        let removed = try await recorder.waitForPath(after: 1)
        #expect([.linkRemoved, .linkDown].contains(removed.reason), "got \(removed.reason)")
        #expect(removed.path.status == .unreachable)
        #expect(try await eventually { !monitor.currentPath.interfaces.contains { $0.name == "pa0" } })
        #expect(recorder.pathChanges.count == 2, "one change for one deletion")

        try network.batch(
            network.host,
            """
            link add pa0 type veth peer name pb0 netns \(network.gateway)
            addr add \(TestNetwork.hostAddress)/24 dev pa0
            link set pa0 up
            """)
        try network.batch(network.gateway, "addr add \(TestNetwork.gatewayAddress)/24 dev pb0\nlink set pb0 up")
        #expect(try await eventually { monitor.currentPath.interfaces.first { $0.name == "pa0" }?.hasCarrier == true })
        try network.ip(network.host, "route add default via \(TestNetwork.gatewayAddress)")
        let back = try await recorder.waitForPath(after: 2)
        #expect(back.path.status == .reachable && back.path.primaryInterface?.name == "pa0")
        #expect(back.path.primaryInterface?.index != oldIndex)
        #expect(back.path.interfaces.filter { $0.name == "pa0" }.count == 1, "the old link is gone from the model")
    }

    @Test("IPv6: tentative and DAD-failed addresses are not usable, and a link-local source is no path")
    func ipv6Tentative() async throws {
        let network = try TestNetwork(ipv6: true)
        let (monitor, recorder) = try await recorded(network)
        defer { monitor.stop() }
        #expect(monitor.currentPath.ipv6?.gateway?.description == TestNetwork.gatewayAddress6)

        func pa0Addresses() -> [String] {
            monitor.currentPath.interfaces.first { $0.name == "pa0" }?.addresses.map(\.description) ?? []
        }
        /// Runs `ip` and waits until the monitor has read at least one message that it caused.
        func ipAndRead(_ namespace: String, _ arguments: String) async throws {
            let before = monitor.statistics.messages
            try network.ip(namespace, arguments)
            #expect(try await eventually { monitor.statistics.messages > before })
        }

        try Shell.check(["ip", "netns", "exec", network.host, "sysctl", "-qw", "net.ipv6.conf.pa0.accept_dad=1"])
        try await ipAndRead(network.host, "-6 addr del \(TestNetwork.hostAddress6)/64 dev pa0")
        let lost = try await recorder.waitForPath(after: 1)
        #expect(lost.path.ipv6 == nil && lost.reason == .addressRemoved, "only fe80:: is left as a source")
        #expect(lost.path.status == .reachable, "IPv4 is untouched")

        // Added again, the address goes through duplicate address detection (about a second).
        try await ipAndRead(network.host, "-6 addr add \(TestNetwork.hostAddress6)/64 dev pa0")
        #expect(!(try network.json(network.host, "-6 addr show dev pa0 tentative")).isEmpty, "the kernel says tentative")
        #expect(!pa0Addresses().contains("fd99::1/64"))
        #expect(monitor.currentPath.ipv6 == nil)
        let back = try await recorder.waitForPath(after: 2)
        #expect(back.path.ipv6?.source?.description == TestNetwork.hostAddress6 && back.reason == .addressChanged)
        #expect(pa0Addresses().contains("fd99::1/64"))

        // The same address on the gateway first: DAD fails on the host, and the address is never usable.
        try network.ip(network.gateway, "-6 addr add fd99::5/64 dev pb0 nodad")
        try await ipAndRead(network.host, "-6 addr add fd99::5/64 dev pa0")
        #expect(try await eventually { !(try network.json(network.host, "-6 addr show dev pa0 dadfailed")).isEmpty })
        try await Task.sleep(for: .milliseconds(100))
        #expect(!pa0Addresses().contains("fd99::5/64"))
        #expect(recorder.pathChanges.count == 3, "the failed address changed nothing visible")
    }

    @Test("A receive-buffer overrun is detected and resynced: the final snapshot equals the kernel's")
    func overrunFlood() async throws {
        let network = try TestNetwork()
        let monitor = try await start(network, receiveBufferSize: 2048)
        defer { monitor.stop() }

        func kernelAddresses() throws -> Set<String> {
            let links = try network.json(network.host, "addr show dev pa0")
            let info = links.first?["addr_info"] as? [[String: Any]] ?? []
            return Set(
                info.compactMap { entry in
                    guard let local = entry["local"] as? String, let prefix = entry["prefixlen"] as? Int else { return nil }
                    return entry["tentative"] == nil && entry["dadfailed"] == nil ? "\(local)/\(prefix)" : nil
                })
        }
        func monitorAddresses() -> Set<String> {
            Set(monitor.currentPath.interfaces.first { $0.name == "pa0" }?.addresses.map(\.description) ?? [])
        }

        let adds = (0..<3000).map { "addr add 10.100.\($0 / 250).\($0 % 250 + 1)/32 dev pa0" }
        try network.batch(network.host, adds.joined(separator: "\n"))
        #expect(try await eventually(timeout: .seconds(20)) { try monitorAddresses() == kernelAddresses() })
        #expect(monitorAddresses().filter { !$0.contains(":") }.count == 3001, "IPv4 (fe80:: comes and goes with DAD)")

        // Deletions, link changes in the middle of them, and the default route gone at the end.
        let deletes = (0..<3000).filter { $0 % 2 == 0 }.map { "addr del 10.100.\($0 / 250).\($0 % 250 + 1)/32 dev pa0" }
        let linkChanges = ["link set pa0 mtu 1400", "link set lo mtu 9000", "link set pa0 mtu 1280"]
        let commands = deletes[..<500] + linkChanges + deletes[500...] + ["route del default"]
        try network.batch(network.host, commands.joined(separator: "\n"))
        #expect(try await eventually(timeout: .seconds(20)) { try monitorAddresses() == kernelAddresses() })
        #expect(monitorAddresses().filter { !$0.contains(":") }.count == 1501, "IPv4 (fe80:: comes and goes with DAD)")
        #expect(monitor.statistics.resyncs >= 1, "a 2 KiB buffer must overrun under \(monitor.statistics.messages) messages")

        // Links: name, MTU, admin state and operstate as `ip -j link` has them.
        func linkFacts(_ name: String?, _ mtu: Int?, _ up: Bool?, _ state: String?) -> String {
            "\(name ?? "?") \(mtu ?? 0) \(up == true ? "up" : "down") \(state ?? "?")"
        }
        let kernelLinks = try network.json(network.host, "link show").map {
            linkFacts($0["ifname"] as? String, $0["mtu"] as? Int, ($0["flags"] as? [String])?.contains("UP"), $0["operstate"] as? String)
        }
        let monitorLinks = monitor.currentPath.interfaces.map {
            linkFacts($0.name, $0.mtu, $0.isAdminUp, $0.operationalState.rawValue)
        }
        #expect(monitorLinks == kernelLinks)
        #expect(monitorLinks.contains("pa0 1280 up UP") && monitorLinks.contains("lo 9000 up UNKNOWN"))

        // Routes: no default route in the kernel, none in the snapshot.
        #expect(try network.json(network.host, "route show default").isEmpty)
        #expect(try network.json(network.host, "-6 route show default").isEmpty)
        #expect(monitor.currentPath.status == .unreachable && monitor.currentPath.gateways.isEmpty)
    }

    @Test("Targets can be added, evaluated once (cancellably) and removed; a stopped monitor refuses politely")
    func targetAPI() async throws {
        let network = try TestNetwork()
        let monitor = try await start(network)
        let recorder = EventRecorder(monitor)
        try await recorder.waitForPath(after: 0)

        let added = try await monitor.addTarget(try ReachabilityTarget(parsing: TestNetwork.gatewayAddress))
        #expect(added.status == .reachable && added.interfaceName == "pa0")
        let event = try await recorder.waitForTarget(TestNetwork.gatewayAddress, after: 0)
        #expect(event.reason == .targetAdded && event.previous == nil)
        #expect(monitor.currentPath.targets.map(\.target) == [TestNetwork.gatewayAddress])

        let local = try await monitor.reachability(of: try ReachabilityTarget(parsing: "127.0.0.1"))
        #expect(local.status == .reachable && local.interfaceName == "lo")
        #expect(monitor.currentPath.targets.count == 1, "a one-off evaluation is not watched")

        let cancelled = Task {
            while !Task.isCancelled { await Task.yield() }
            return try await monitor.reachability(of: try ReachabilityTarget(parsing: "127.0.0.1"))
        }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }

        monitor.removeTarget(try ReachabilityTarget(parsing: TestNetwork.gatewayAddress))
        #expect(try await eventually { monitor.currentPath.targets.isEmpty })

        monitor.stop()
        monitor.stop()
        await #expect(throws: ReachabilityError.self) {
            try await monitor.addTarget(try ReachabilityTarget(parsing: "192.0.2.1"))
        }
        var afterStop = 0
        for await _ in monitor.changes() { afterStop += 1 }
        #expect(afterStop == 0, "a stopped monitor's stream ends at once")
    }

    @Test("Change handlers: the current state first, removable at once, and may stop the monitor")
    func changeHandlers() async throws {
        let network = try TestNetwork()
        let monitor = try await start(network)
        let removed = EventBox()
        let stopping = EventBox()
        monitor.removeChangeHandler(monitor.onChange { removed.append($0) })
        monitor.onChange { event in
            stopping.append(event)
            if case .path(let change) = event, change.reason == .carrierLost { monitor.stop() }
        }
        #expect(try await eventually { stopping.count == 1 })
        #expect(stopping.reasons == [.initial])

        try network.ip(network.gateway, "link set pb0 down")
        #expect(try await eventually { stopping.count == 2 })
        #expect(try await eventually { netlinkThreads() == 0 }, "the thread ends although stop() came from inside it")
        try network.ip(network.gateway, "link set pb0 up")
        try await Task.sleep(for: .milliseconds(300))
        #expect(stopping.reasons == [.initial, .carrierLost], "nothing after stop()")
        // Removed at once: it saw at most the initial state (if its registration ran first), never a change,
        // and a registration that ran after the removal did not bring it back.
        #expect(removed.count <= 1 && removed.reasons.allSatisfy { $0 == .initial })
        await monitor.waitUntilStopped()
    }

    /// Threads of this process that run a monitor's netlink loop.
    private func netlinkThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter {
            (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?.hasPrefix("pinpath-netlink") == true
        }.count
    }

    @Test("A missing namespace is a clear error, not a crash")
    func missingNamespace() async throws {
        await #expect {
            try await ReachabilityMonitor.start(.init(networkNamespace: "pp-does-not-exist"))
        } throws: { error in
            let error = error as! ReachabilityError
            return error.code == .namespaceUnavailable && error.message.contains("pp-does-not-exist")
        }
    }
}

/// Opens /dev/net/tun as the named device and keeps it open, so the tun device has carrier, as a VPN
/// client would. Run with `python3 -c SCRIPT NAME`.
enum TunHolder {
    static let script = """
        import fcntl, os, struct, sys, time
        fd = os.open("/dev/net/tun", os.O_RDWR)
        fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", sys.argv[1].encode(), 0x0001 | 0x1000))  # TUNSETIFF, IFF_TUN|IFF_NO_PI
        time.sleep(120)
        """
}

/// Events collected by a change handler, from the monitor's thread.
final class EventBox: Sendable {
    private let events = Mutex<[ReachabilityEvent]>([])
    func append(_ event: ReachabilityEvent) { events.withLock { $0.append(event) } }
    var count: Int { events.withLock { $0.count } }
    var reasons: [ChangeReason] {
        events.withLock { $0.map { if case .path(let change) = $0 { change.reason } else { .targetAdded } } }
    }
}
