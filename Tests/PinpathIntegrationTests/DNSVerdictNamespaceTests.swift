import Foundation
import PinpathTestSupport
import Testing

/// Issue 25, round 2: a DNS answer is the answerer's to write, so it may not silence a TLS endpoint.
///
///     [host: pa0 10.99.0.1/24, IPv4 only, default via .254] ── veth ── [gateway: pb0 10.99.0.254/24, 198.51.100.7 on lo]
///
/// The host namespace's /etc/hosts is "the DNS": it maps valid.test to the gateway's 198.51.100.7, where
/// `openssl s_server` serves the genuine chain (``AgentTests/startServer(_:leaf:chain:address:port:)``), until the
/// attacker answers with an address the host has no route to (2001:db8::1: the host has no IPv6 route). Before
/// the fix, a pinned endpoint whose name resolved there was `unreachable` (at start) or kept `up` with every probe
/// dropped (later), with no `down` and no `pin.failure` while the attacker took the endpoint over.
@Suite("A DNS answer in a namespace", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct DNSVerdictNamespaceTests {
    static let genuine = AgentTests.serverAddress
    /// The attacker's answer: no route from the host (it has no IPv6 route at all).
    static let spoofed = "2001:db8::1"

    /// The namespaces and the agent, removed by `remove()`.
    final class Scene {
        let network: TestNetwork
        let directory: String
        let events: AgentTests.Events
        var metricsFile: String { "\(directory)/pinpath.prom" }
        private var agent: pid_t?

        init(hosts: String) throws {
            network = try TestNetwork()
            directory = "\(TestPKI.shared.directory)/dns-\(UUID().uuidString)"
            events = AgentTests.Events(file: "\(directory)/events.jsonl")
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try network.ip(network.gateway, "addr add \(DNSVerdictNamespaceTests.genuine)/32 dev lo")
                try network.hosts(hosts)
            } catch {
                remove()
                throw error
            }
        }

        /// Starts `pinpath run` in the host namespace with every probe written, the `endpoints` (YAML items) and
        /// the `policies` (YAML, top-level).
        func start(endpoints: String, policies: String = "") throws {
            let configuration = "\(directory)/pinpath.yaml"
            try """
            events: { output: stdout, probes: all }
            metrics: { textfile: \(metricsFile) }
            \(policies)
            endpoints:
            \(endpoints)
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
            agent = try network.startAgent(configuration: configuration, events: events.file, errors: "\(directory)/agent.stderr")
        }

        func stop() async throws {
            guard let agent else { return }
            self.agent = nil
            #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(8)) == 0)
        }

        func remove() {
            if let agent { Shell.kill(agent) }
            agent = nil
            network.remove()
            try? FileManager.default.removeItem(atPath: directory)
        }

        @discardableResult
        func endpoint(_ name: String, _ state: String, after: Int = 0, timeout: Duration = .seconds(15)) async throws -> [String: Any] {
            try await events.wait(for: "endpoint.state_changed", after: after, timeout: timeout) {
                $0["endpoint"] as? String == name && $0["state"] as? String == state
            }
        }

        func states(of name: String) -> [String] {
            events.of("endpoint.state_changed").filter { $0["endpoint"] as? String == name }.compactMap { $0["state"] as? String }
        }

        /// The metrics textfile once it holds `line`, or as it is after 15 s.
        func metrics(containing line: String) async -> String {
            var text = ""
            for _ in 0..<60 where !text.contains(line) {
                try? await Task.sleep(for: .milliseconds(250))
                text = (try? String(contentsOfFile: metricsFile, encoding: .utf8)) ?? ""
            }
            return text
        }

        /// Gives the host a route to the spoofed address, to the gateway, which holds it: where the attacker's
        /// answer leads once the attacker serves there.
        func routeSpoofedAddress() throws {
            let spoofed = DNSVerdictNamespaceTests.spoofed
            try network.ip(network.gateway, "-6 addr add fd99::fe/64 dev pb0 nodad")
            try network.ip(network.gateway, "-6 addr add \(spoofed)/128 dev lo")
            try network.ip(network.host, "-6 addr add fd99::1/64 dev pa0 nodad")
            try network.ip(network.host, "-6 route add \(spoofed)/128 via fd99::fe")
        }
    }

    /// The probes of `name` after the first `after` events.
    static func probes(_ scene: Scene, _ name: String, after: Int) -> [[String: Any]] {
        scene.events.all.dropFirst(after).filter { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == name }
    }

    @Test(
        """
        Issue 25 (round 2): the answer for a pinned endpoint's name turns unroutable after up: every probe fails (category unreachable, \
        naming the address), the endpoint goes down within its threshold, never the state unreachable; once the answer leads to the \
        attacker's chain, pin.failure
        """)
    func spoofedAnswerAfterUp() async throws {
        let scene = try Scene(hosts: "\(Self.genuine) valid.test\n")
        defer { scene.remove() }
        let genuineServer = try AgentTests().startServer(scene.network, leaf: "valid", chain: ["inter"])
        defer { Shell.stopIfRunning(genuineServer) }
        let pinned = try ConnectivityNamespaceTests.pinnedEndpoint(interval: "1s")
        try scene.start(endpoints: pinned.endpoints, policies: pinned.policies)
        try await scene.endpoint("pinned", "up")

        // The attacker answers DNS. libcurl keeps its answers for 60 s (CURLOPT_DNS_CACHE_TIMEOUT's default, which
        // the agent does not change), and the monitor's answer stays the genuine one: it resolves names again only
        // when the path changes.
        var mark = scene.events.all.count
        let spoofedAt = ContinuousClock.now
        try scene.network.hosts("\(Self.spoofed) valid.test\n")
        let down = try await scene.endpoint("pinned", "down", after: mark, timeout: .seconds(100))
        print("down \(ContinuousClock.now - spoofedAt) after the spoofed answer")
        #expect(down["level"] as? String == "error")
        #expect(down["cause"] as? String == "probe_failed")
        #expect(down["consecutive"] as? Int == 2)
        let probe = try #require(down["probe"] as? [String: Any])
        #expect(probe["outcome"] as? String == "failure")
        #expect(probe["error_category"] as? String == "unreachable")
        #expect((probe["message"] as? String)?.contains("no resolved address is reachable (\(Self.spoofed): no_route)") == true, "\(probe)")
        #expect(!Self.probes(scene, "pinned", after: mark).contains { $0["outcome"] as? String == "unreachable" })
        let metrics = await scene.metrics(containing: "pinpath_endpoint_state{endpoint=\"pinned\",state=\"down\"} 1")
        #expect(metrics.contains("pinpath_endpoint_state{endpoint=\"pinned\",state=\"down\"} 1"), "\(metrics)")

        // The attacker now serves a chain from the other CA the store trusts, where its answer leads.
        mark = scene.events.all.count
        try scene.routeSpoofedAddress()
        let rogue = try AgentTests().startServer(scene.network, leaf: "rogue", chain: ["otherinter"], address: Self.spoofed)
        defer { Shell.stopIfRunning(rogue) }
        let failure = try await scene.events.wait(for: "pin.failure", after: mark)
        #expect(failure["level"] as? String == "error")
        #expect(failure["hostname"] as? String == "valid.test")
        #expect(failure["validation-result"] as? Int == 1)
        try await scene.events.wait(for: "probe.completed", after: mark) {
            $0["endpoint"] as? String == "pinned" && $0["error_category"] as? String == "policy_rejected"
        }
        #expect(!scene.states(of: "pinned").contains("unreachable"), "a DNS answer never holds a TLS endpoint")
        try await scene.stop()
    }

    @Test(
        """
        Issue 25 (round 2): the spoofed answer in place at start: the pinned endpoint is down (probe_failed, category unreachable, naming \
        the address libcurl resolved), not unreachable
        """)
    func spoofedAnswerAtStart() async throws {
        let scene = try Scene(hosts: "\(Self.spoofed) valid.test\n")
        defer { scene.remove() }
        let genuineServer = try AgentTests().startServer(scene.network, leaf: "valid", chain: ["inter"])
        defer { Shell.stopIfRunning(genuineServer) }
        let pinned = try ConnectivityNamespaceTests.pinnedEndpoint(interval: "1s")
        try scene.start(endpoints: pinned.endpoints, policies: pinned.policies)

        let down = try await scene.endpoint("pinned", "down")
        #expect(down["previous_state"] is NSNull)
        #expect(down["cause"] as? String == "probe_failed")
        let probe = try #require(down["probe"] as? [String: Any])
        #expect(probe["error_category"] as? String == "unreachable")
        // The monitor's own answer (the spoofed address, no route) did not refuse the probe: libcurl resolved the
        // name again and the kernel refused each address it got.
        #expect((probe["message"] as? String)?.contains("no resolved address is reachable (\(Self.spoofed): no_route)") == true, "\(probe)")
        #expect(!scene.states(of: "pinned").contains("unreachable"))
        try await scene.stop()
    }

    @Test(
        """
        Controls: a numeric TLS host behind a blackhole route and a plain endpoint whose name has no route are unreachable (the \
        kernel's word, today's rule for plain endpoints); with the host's link down, the named TLS endpoint is unreachable too
        """)
    func kernelStillHolds() async throws {
        let scene = try Scene(hosts: "\(Self.genuine) valid.test\n\(Self.spoofed) plain.test\n")
        defer { scene.remove() }
        let genuineServer = try AgentTests().startServer(scene.network, leaf: "valid", chain: ["inter"])
        defer { Shell.stopIfRunning(genuineServer) }
        try scene.network.ip(scene.network.host, "route add blackhole 198.51.100.8/32")
        let pinned = try ConnectivityNamespaceTests.pinnedEndpoint(interval: "1s")
        try scene.start(
            endpoints: pinned.endpoints + """

                  - { name: numeric, url: "https://198.51.100.8:\(AgentTests.port)/", interval: 1s, timeout: 900ms }
                  - { name: plain, url: "http://plain.test:8080/", interval: 1s, timeout: 900ms }
                """,
            policies: pinned.policies)

        let numeric = try await scene.endpoint("numeric", "unreachable")
        #expect(numeric["cause"] as? String == "path_unreachable")
        let plain = try await scene.endpoint("plain", "unreachable")
        #expect(plain["cause"] as? String == "path_unreachable")
        try await scene.endpoint("pinned", "up")
        #expect(!scene.states(of: "numeric").contains("down") && !scene.states(of: "plain").contains("down"))

        let mark = scene.events.all.count
        try scene.network.ip(scene.network.host, "link set pa0 down")
        let held = try await scene.endpoint("pinned", "unreachable", after: mark)
        #expect(held["cause"] as? String == "path_unreachable")
        #expect(!scene.states(of: "pinned").contains("down"))
        try await scene.stop()
    }

    @Test(
        """
        Issue 25 (round 3): on a network without a default route (a route to the server's network only), the genuine answer \
        keeps the pinned endpoint up and an unroutable answer makes it down (category unreachable), never the state unreachable
        """)
    func spoofedAnswerWithoutDefaultRoute() async throws {
        let scene = try Scene(hosts: "\(Self.genuine) valid.test\n\(Self.spoofed) spoofed.test\n")
        defer { scene.remove() }
        try scene.network.ip(scene.network.host, "route del default")
        try scene.network.ip(scene.network.host, "route add 198.51.100.0/24 via \(TestNetwork.gatewayAddress)")
        let genuineServer = try AgentTests().startServer(scene.network, leaf: "valid", chain: ["inter"])
        defer { Shell.stopIfRunning(genuineServer) }
        let pinned = try ConnectivityNamespaceTests.pinnedEndpoint(interval: "1s")
        try scene.start(
            endpoints: pinned.endpoints + """

                  - { name: spoofed, url: "https://spoofed.test:\(AgentTests.port)/", policy: genuine-pins, interval: 1s, timeout: 900ms }
                """,
            policies: pinned.policies)
        try await scene.endpoint("pinned", "up")
        let down = try await scene.endpoint("spoofed", "down")
        #expect(down["cause"] as? String == "probe_failed")
        let probe = try #require(down["probe"] as? [String: Any])
        #expect(probe["error_category"] as? String == "unreachable")
        #expect((probe["message"] as? String)?.contains("no resolved address is reachable (\(Self.spoofed): no_route)") == true, "\(probe)")
        #expect(!scene.states(of: "spoofed").contains("unreachable"))
        try await scene.stop()
    }
}
