import Foundation
import PinpathHTTP
import PinpathReachability
import PinpathTestSupport
import Synchronization
import Testing

/// The request core's reachability gate on the kernel: a namespace whose default route is removed and
/// restored, with an HTTP server beyond the gateway at 198.51.100.7.
@Suite("Request gating on the kernel", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct GateTests {
    static let server = "198.51.100.7", port = 8080

    /// A network whose gateway namespace serves HTTP on 198.51.100.7:8080 (routed via the default route).
    func network() throws -> TestNetwork {
        let network = try TestNetwork()
        try network.ip(network.gateway, "addr add \(Self.server)/32 dev lo")
        try network.spawn(in: network.gateway, ["python3", "-m", "http.server", "--bind", Self.server, "\(Self.port)"])
        try network.waitForListener(in: network.gateway, Self.server, Self.port)
        return network
    }

    @Test("With the default route removed, a request fails as not reachable at once, before any DNS query or connection")
    func failFast() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.host, "route del default")
        let monitor = try await ReachabilityMonitor.start(.init(networkNamespace: network.host))
        defer { monitor.stop() }
        let session = try Session(monitor: monitor)
        // A numeric host is looked up in the kernel; a host name is refused from the path alone, so no
        // resolver is asked (an unreachable resolver would take seconds, far beyond the times printed).
        for url in ["http://\(Self.server):\(Self.port)/", "https://gated.invalid/"] {
            var elapsed: [Duration] = []
            for _ in 0..<5 {
                let started = ContinuousClock.now
                await #expect {
                    _ = try await session.send(SessionRequest(method: .get, url: URL(string: url)!))
                } throws: { error in
                    guard let error = error as? HTTPError else { return false }
                    return error.code == .unreachable && error.reachability?.reason == .noRoute
                }
                elapsed.append(ContinuousClock.now - started)
            }
            let median = elapsed.sorted()[2]
            print("not-reachable failure for \(url): median \(median), all \(elapsed)")
            #expect(median < TestTime.scaled(.milliseconds(10)))
        }
    }

    @Test(
        "A numeric host's remembered verdict ends with the kernel's next change: a blackhole route that leaves the path as it was refuses the next request, and its removal lets the one after through"
    )
    func rememberedVerdictEndsWithAChange() async throws {
        let network = try network()
        defer { network.remove() }
        let monitor = try await ReachabilityMonitor.start(.init(networkNamespace: network.host))
        defer { monitor.stop() }
        let session = try Session(monitor: monitor)
        let request = SessionRequest(method: .get, url: URL(string: "http://\(Self.server):\(Self.port)/")!)
        /// Changes the host's routes and returns once the monitor has read the change.
        func change(_ command: String) async throws {
            let before = monitor.statistics.messages
            try network.ip(network.host, command)
            let deadline = ContinuousClock.now + .seconds(5)
            while monitor.statistics.messages == before, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            #expect(monitor.statistics.messages > before, "the monitor read no message for \(command)")
        }

        // Admitted and answered (the server's status does not matter). A verdict asked once the kernel has
        // settled since the monitor's last message is kept: the third request is admitted on the second's.
        #expect(try await session.send(request).statusCode > 0)
        try await Task.sleep(for: ReachabilityMonitor.settlingTime + .milliseconds(100))
        for _ in 0..<2 { #expect(try await session.send(request).statusCode > 0) }
        try await change("route add blackhole \(Self.server)/32")
        #expect(monitor.currentPath.status == .reachable, "the default route still serves the path")
        await #expect {
            _ = try await session.send(request)
        } throws: { error in
            (error as? HTTPError)?.code == .unreachable && (error as? HTTPError)?.reachability?.reason == .blackholeRoute
        }
        try await change("route del blackhole \(Self.server)/32")
        #expect(try await session.send(request).statusCode > 0)
    }

    @Test(
        "A numeric host's route is answered while the monitor's thread is held in a slow change handler: the gate asks the kernel on its own thread, in the monitor's namespace, and refuses at once"
    )
    func answeredWhileTheMonitorThreadIsBusy() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        // Only the monitored namespace has the blackhole: an answer from the test's own namespace would admit.
        try network.ip(network.host, "route add blackhole 198.51.100.9/32")
        let monitor = try await ReachabilityMonitor.start(.init(networkNamespace: network.host))
        defer { monitor.stop() }
        let session = try Session(monitor: monitor)
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = Mutex(true)
        // The handler gets the initial state on the monitor's thread: hold the thread in its first call.
        monitor.onChange { _ in
            let isFirst = first.withLock { isFirst in
                defer { isFirst = false }
                return isFirst
            }
            guard isFirst else { return }
            entered.signal()
            release.wait()
        }
        defer { release.signal() }
        await Task.detached { entered.wait() }.value

        let started = ContinuousClock.now
        // Released after this long at the latest: a gate that waits for the monitor's thread answers only then.
        let bound = TestTime.scaled(.seconds(2))
        let releaser = Task.detached {
            try? await Task.sleep(for: bound)
            release.signal()
        }
        defer { releaser.cancel() }
        await #expect {
            _ = try await session.send(SessionRequest(method: .get, url: URL(string: "http://198.51.100.9:\(Self.port)/")!))
        } throws: { error in
            (error as? HTTPError)?.code == .unreachable && (error as? HTTPError)?.reachability?.reason == .blackholeRoute
        }
        let elapsed = ContinuousClock.now - started
        print("refused while the monitor's thread was held: \(elapsed)")
        #expect(elapsed < bound, "the gate waited for the monitor's thread (\(elapsed))")
    }

    @Test("pinpath request exits 4 without connecting, waits for connectivity when asked, and skips addresses with no route")
    func cli() async throws {
        let network = try network()
        defer { network.remove() }
        try network.hosts("198.51.100.9 blackholed.test\n198.51.100.10 blackholed.test\n")  // both to be blackholed
        func request(_ arguments: [String]) throws -> Shell.Result {
            try Shell.run(["ip", "netns", "exec", network.host, Shell.pinpath, "request"] + arguments)
        }

        let reachable = try request(["http://\(Self.server):\(Self.port)/"])
        #expect(reachable.status == 0, "\(reachable.stderr)")
        #expect(reachable.stdout.contains("Directory listing"))

        // Both addresses of the name are blackholed: each is skipped before connect(), so the request is
        // "not reachable" (4), not a connection error (3, what connect() itself would give).
        try network.batch(network.host, "route add blackhole 198.51.100.9/32\nroute add blackhole 198.51.100.10/32")
        let skipped = try request(["http://blackholed.test:\(Self.port)/"])
        #expect(skipped.status == 4, "\(skipped.stderr)")
        // The message names every address refused, with the kernel's reason.
        for address in ["198.51.100.9", "198.51.100.10"] {
            #expect(skipped.stderr.contains("\(address): blackhole_route"), "\(skipped.stderr)")
        }

        try network.ip(network.host, "route del default")
        let refused = try request(["http://\(Self.server):\(Self.port)/", "--json"])
        #expect(refused.status == 4)
        #expect(refused.stderr.contains("no_route"), "\(refused.stderr)")
        // --json says the same on standard output, as one object.
        #expect(
            refused.stdout.hasPrefix(#"{"url":"http://\#(Self.server):\#(Self.port)/","error":{"category":"unreachable","#),
            "\(refused.stdout)")
        #expect(refused.stdout.hasSuffix(#""exit_code":4}}"# + "\n"), "\(refused.stdout)")

        // Waiting: the request is started without a route and completes once it is restored.
        let scratch = try TemporaryDirectory("wait")
        let output = scratch.file("request.out")
        let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let waiting = try Shell.spawn(
            [
                "ip", "netns", "exec", network.host, Shell.pinpath, "request", "http://\(Self.server):\(Self.port)/",
                "--wait-for-connectivity", "15",
            ],
            stdout: descriptor)
        close(descriptor)
        try await Task.sleep(for: .milliseconds(500))
        try network.ip(network.host, "route add default via \(TestNetwork.gatewayAddress)")
        let status = try await Shell.stop(waiting, signal: 0, timeout: .seconds(15))
        #expect(status == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8).contains("Directory listing"))
    }
}
