import Foundation
import PinpathTestSupport
import Testing

/// Issue 14, item 2, on the kernel: the connectivity verdict against real servers in namespaces; and issue 25,
/// item 1: an attacker on the path who makes the verdict say `portal` or `intercepted` silences no TLS endpoint.
///
///     [host: pa0 10.99.0.1/24, default via .254] ── veth ── [gateway: pb0 10.99.0.254/24, 198.51.100.7 on lo]
///
/// "The internet" is 198.51.100.7:8080 in the gateway namespace, reached through the default route: a small
/// Python server that is either a captive portal (every request gets a 302 to http://portal.example/login
/// with a token in the query), open (every request gets 204) or stalling (a request gets no answer), switched
/// by a file, and logging every request. A LAN service (10.99.0.254:8081, on the host's connected subnet)
/// answers 200 throughout. A dead upstream is a blackhole route in the gateway: the host's route is present,
/// its SYNs vanish. The attack tests add a pinned endpoint, valid.test at 198.51.100.7:4433 (`openssl
/// s_server`, as ``AgentTests``), whose chain the gateway replaces with one from the other CA its policy's
/// store trusts, and a pin report collector on the LAN (10.99.0.254).
@Suite("Connectivity in a namespace", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct ConnectivityNamespaceTests {
    static let internet = "198.51.100.7", port = 8080, lanPort = 8081
    static let checkURL = "http://\(internet):\(port)/generate_204"

    /// The scene: namespaces, the switchable server and the LAN service; removed by `remove()`.
    final class Scene {
        let network: TestNetwork
        let directory: String
        var modeFile: String { "\(directory)/mode" }
        var requestLog: String { "\(directory)/requests.log" }

        init(mode: String = "portal", defaultRoute: Bool = true) throws {
            network = try TestNetwork()
            directory = "\(TestPKI.shared.directory)/connectivity-\(UUID().uuidString)"
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try setMode(mode)
                FileManager.default.createFile(atPath: requestLog, contents: nil)
                try Self.server.write(toFile: "\(directory)/server.py", atomically: true, encoding: .utf8)
                if !defaultRoute { try network.ip(network.host, "route del default") }
                try network.ip(network.gateway, "addr add \(ConnectivityNamespaceTests.internet)/32 dev lo")
                try network.spawn(
                    in: network.gateway,
                    [
                        "python3", "\(directory)/server.py", ConnectivityNamespaceTests.internet, "\(ConnectivityNamespaceTests.port)",
                        modeFile, requestLog,
                    ])
                try network.spawn(
                    in: network.gateway,
                    [
                        "python3", "-m", "http.server", "--bind", TestNetwork.gatewayAddress, "\(ConnectivityNamespaceTests.lanPort)",
                        "--directory", directory,
                    ])
                try network.waitForListener(in: network.gateway, ConnectivityNamespaceTests.internet, ConnectivityNamespaceTests.port)
                try network.waitForListener(in: network.gateway, TestNetwork.gatewayAddress, ConnectivityNamespaceTests.lanPort)
                // The listener checks above were requests too: start the log from here.
                try "".write(toFile: requestLog, atomically: true, encoding: .utf8)
            } catch {
                remove()
                throw error
            }
        }

        func setMode(_ mode: String) throws { try mode.write(toFile: modeFile, atomically: true, encoding: .utf8) }

        /// The request lines the "internet" server saw.
        var requests: [String] {
            ((try? String(contentsOfFile: requestLog, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        func remove() {
            network.remove()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Answers every request by the mode file: `portal` a 302 to the login page, `location URL` a 302 to URL
        /// (a hostile portal's), `open` a 204, `stall` nothing (the connection stays open, as an attacker holding
        /// the check until its timeout).
        static let server = """
            import sys, time, http.server
            address, port, mode_file, log_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    with open(log_file, "a") as log:
                        log.write(self.requestline + "\\n")
                    mode = open(mode_file).read().strip()
                    if mode == "stall":
                        time.sleep(600)
                        return
                    if mode == "portal" or mode.startswith("location "):
                        self.send_response(302)
                        location = mode[len("location "):] if mode.startswith("location ") else None
                        self.send_header("Location", location or "http://portal.example/login?token=s3cret-session")
                        self.send_header("Content-Length", "0")
                    else:
                        self.send_response(204)
                    self.end_headers()
                def log_message(self, *args):
                    pass
            server = http.server.ThreadingHTTPServer((address, port), Handler)
            server.daemon_threads = True
            server.serve_forever()
            """
    }

    /// The agent in the host namespace on a configuration with the check and two endpoints: one on "the
    /// internet", one on the LAN; and the `more` endpoints after them (YAML items, indented as `endpoints:`
    /// items are), under `policies` (YAML, top-level). With `everyProbe`, `probe.completed` is written too;
    /// `checkExpect` is the check's `expect:` mapping (YAML flow items), if any.
    final class RunningAgent {
        let events: AgentTests.Events
        let metricsFile: String
        private let pid: pid_t
        private var stopped = false

        init(
            _ scene: Scene, interval: String, timeout: String, checkURL: String = ConnectivityNamespaceTests.checkURL,
            checkExpect: String? = nil, endpoints more: String = "", policies: String = "", everyProbe: Bool = false
        ) throws {
            let configuration = "\(scene.directory)/pinpath.yaml"
            metricsFile = "\(scene.directory)/pinpath.prom"
            try """
            events: { output: stdout, probes: \(everyProbe ? "all" : "changes") }
            metrics: { textfile: \(metricsFile) }
            connectivity:
              url: \(checkURL)
              interval: \(interval)
              timeout: \(timeout)
            \(checkExpect.map { "  expect: { \($0) }" } ?? "")
            \(policies)
            endpoints:
              - name: external
                url: http://\(ConnectivityNamespaceTests.internet):\(ConnectivityNamespaceTests.port)/service
                interval: 1s
              - name: lan
                url: http://\(TestNetwork.gatewayAddress):\(ConnectivityNamespaceTests.lanPort)/
                interval: 1s
            \(more)
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
            events = AgentTests.Events(file: "\(scene.directory)/events.jsonl")
            pid = try scene.network.startAgent(
                configuration: configuration, events: events.file, errors: "\(scene.directory)/agent.stderr")
        }

        deinit { if !stopped { Shell.kill(pid) } }

        func stop() async throws {
            stopped = true
            _ = try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(8))
        }

        func connectivity(_ state: String, after: Int = 0, timeout: Duration = .seconds(15)) async throws -> [String: Any] {
            try await events.wait(for: "connectivity.changed", after: after, timeout: timeout) { $0["state"] as? String == state }
        }

        func endpoint(_ name: String, _ state: String, after: Int = 0) async throws -> [String: Any] {
            try await events.wait(for: "endpoint.state_changed", after: after) {
                $0["endpoint"] as? String == name && $0["state"] as? String == state
            }
        }

        /// The metrics textfile once `accepted` holds for it, or as it is after 15 s (it is rewritten every 5 s
        /// at most).
        func metrics(until accepted: (String) -> Bool) async -> String {
            var text = ""
            for _ in 0..<60 where !accepted(text) {
                try? await Task.sleep(for: .milliseconds(250))
                text = (try? String(contentsOfFile: metricsFile, encoding: .utf8)) ?? ""
            }
            return text
        }
    }

    @Test(
        "A captive portal: portal (the redirect's host, not its token), the external endpoint held with captive_portal, the LAN one up; then full and up"
    )
    func portalAndRecovery() async throws {
        let scene = try Scene(mode: "portal")
        defer { scene.remove() }
        let agent = try RunningAgent(scene, interval: "2s", timeout: "1s")

        let portal = try await agent.connectivity("portal")
        #expect(portal["previous"] is NSNull)
        #expect(portal["level"] as? String == "warning")
        #expect(portal["reason"] as? String == "redirected (302) to portal.example")
        #expect(portal["url"] as? String == Self.checkURL)
        #expect((portal["phases_ms"] as? [String: Any])?["connect"] is Double)
        let held = try await agent.endpoint("external", "unreachable")
        #expect(held["cause"] as? String == "captive_portal")
        #expect(held["probe"] is NSNull)
        try await agent.endpoint("lan", "up")
        // Held means not probed: the start's first probes wait for the first verdict (an endpoint's own slot may
        // still come in the milliseconds before it), and none follows it.
        let serviceRequests = scene.requests.filter { $0.hasPrefix("GET /service ") }.count
        #expect(serviceRequests <= 1)
        try await Task.sleep(for: .seconds(3))  // more checks and LAN probes while the portal stays
        #expect(scene.requests.filter { $0.hasPrefix("GET /service ") }.count == serviceRequests, "\(scene.requests)")
        #expect(scene.requests.filter { $0.hasPrefix("GET /generate_204 ") }.count >= 2, "the periodic check runs")
        #expect(!agent.events.all.contains { $0["endpoint"] as? String == "lan" && $0["state"] as? String != "up" })
        #expect(!agent.events.all.contains { $0["endpoint"] as? String == "external" && $0["state"] as? String == "down" })
        #expect(agent.events.of("connectivity.changed").count == 1, "the same verdict again is not a change")
        let metrics = await agent.metrics { $0.contains("pinpath_connectivity_status") }
        #expect(metrics.contains("pinpath_connectivity_status{state=\"portal\"} 1"))
        #expect(metrics.contains("pinpath_connectivity_status{state=\"full\"} 0"))
        #expect(metrics.contains("pinpath_endpoint_state{endpoint=\"external\",state=\"unreachable\"} 1"))

        // The portal lets us through: the periodic check finds it.
        let mark = agent.events.all.count
        try scene.setMode("open")
        let full = try await agent.connectivity("full", after: mark)
        #expect(full["previous"] as? String == "portal")
        #expect(full["level"] as? String == "info")
        try await agent.endpoint("external", "up", after: mark)
        try await agent.stop()
        let written = (try? String(contentsOfFile: agent.events.file, encoding: .utf8)) ?? ""
        #expect(!written.contains("s3cret"), "the portal's token must not reach the events")
    }

    @Test("A dead upstream (route present, SYNs dropped): limited, the external endpoint held with connectivity_limited; then full")
    func deadUpstream() async throws {
        let scene = try Scene(mode: "open")
        defer { scene.remove() }
        try scene.network.ip(scene.network.gateway, "addr del \(Self.internet)/32 dev lo")
        try scene.network.ip(scene.network.gateway, "route add blackhole \(Self.internet)/32")
        let agent = try RunningAgent(scene, interval: "3s", timeout: "1s")

        let limited = try await agent.connectivity("limited")
        #expect((limited["reason"] as? String)?.hasPrefix("timed_out: ") == true, "\(limited)")
        let held = try await agent.endpoint("external", "unreachable")
        #expect(held["cause"] as? String == "connectivity_limited")
        try await agent.endpoint("lan", "up")
        #expect(!agent.events.all.contains { $0["endpoint"] as? String == "external" && $0["state"] as? String == "down" })

        let mark = agent.events.all.count
        try scene.network.ip(scene.network.gateway, "route del blackhole \(Self.internet)/32")
        try scene.network.ip(scene.network.gateway, "addr add \(Self.internet)/32 dev lo")
        let full = try await agent.connectivity("full", after: mark)
        #expect(full["previous"] as? String == "limited")
        try await agent.endpoint("external", "up", after: mark)
        try await agent.stop()
    }

    @Test("No route: none with no request sent; the route's return (a netlink event, not the 300 s interval) brings full")
    func noRouteThenRoute() async throws {
        let scene = try Scene(mode: "open", defaultRoute: false)
        defer { scene.remove() }
        let agent = try RunningAgent(scene, interval: "300s", timeout: "2s")

        let none = try await agent.connectivity("none")
        #expect(none["previous"] is NSNull)
        #expect(none["reason"] as? String == "no_route")
        #expect(none["phases_ms"] is NSNull)
        try await agent.endpoint("external", "unreachable")
        try await agent.endpoint("lan", "up")
        try await Task.sleep(for: .seconds(1))
        #expect(scene.requests.isEmpty, "no check may be sent without a route: \(scene.requests)")

        let mark = agent.events.all.count
        let added = ContinuousClock.now
        try scene.network.ip(scene.network.host, "route add default via \(TestNetwork.gatewayAddress)")
        let full = try await agent.connectivity("full", after: mark, timeout: .seconds(10))
        print("connectivity full \(ContinuousClock.now - added) after the default route came back")
        #expect(full["previous"] as? String == "none")
        try await agent.endpoint("external", "up", after: mark)
        // One route change is one burst: one check, not one per netlink message.
        #expect(scene.requests.filter { $0.hasPrefix("GET /generate_204 ") }.count == 1, "\(scene.requests)")
        try await agent.stop()
    }

    // MARK: Issue 25: the verdict is the attacker's to write; it silences no TLS endpoint

    /// The pinned endpoint, valid.test at 198.51.100.7:4433 (``AgentTests/startServer(_:leaf:chain:port:)``), and
    /// its policy: pins on the genuine intermediate and root, a store that also trusts the other CA (whose chain
    /// for valid.test the attacker serves), and optionally a `report_uri`. As `RunningAgent`'s `endpoints` and
    /// `policies`.
    static func pinnedEndpoint(interval: String, reportURI: String? = nil) throws -> (endpoints: String, policies: String) {
        let pki = TestPKI.shared
        let pins = try pki.chain(["inter", "root"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let endpoints = """
              - name: pinned
                url: https://valid.test:\(AgentTests.port)/
                policy: genuine-pins
                interval: \(interval)
                timeout: 900ms
            """
        let policies = """
            policies:
              genuine-pins:
                mode: public_key
                pins: [\(pins)]
                ca_file: \(pki.path("store"))
            \(reportURI.map { "    report_uri: \($0)" } ?? "")
            """
        return (endpoints, policies)
    }

    /// One attack: the gateway answers the check as the scene and `checkServer` make it, and once the agent has its
    /// verdict, replaces the pinned endpoint's genuine chain with one from the other CA its store trusts. Whatever
    /// the verdict says, the pin failure must come out in full: `pin.failure` at level error naming the state, the
    /// endpoint `down` by its probes (never `unreachable`), the counter, and the report at the collector on the LAN;
    /// while the plain endpoint outside the LAN is held with `plainCause`.
    func interceptPinnedEndpoint(
        checkURL: String, verdict expected: String, level: String, plainCause: String,
        checkServer: (TestNetwork) throws -> pid_t? = { _ in nil }
    ) async throws -> [String: Any] {
        let scene = try Scene(mode: "portal")
        defer { scene.remove() }
        try scene.network.hosts("\(Self.internet) valid.test\n")
        let setup = AgentTests()
        var pinnedServer = try setup.startServer(scene.network, leaf: "valid", chain: ["inter"])
        defer { Shell.stopIfRunning(pinnedServer) }
        let interceptor = try checkServer(scene.network)
        defer { if let interceptor { Shell.stopIfRunning(interceptor) } }
        let collector = try RecordingServer(
            address: TestNetwork.gatewayAddress, directory: scene.directory, namespace: scene.network.gateway)
        defer { collector.stop() }
        let pinned = try Self.pinnedEndpoint(interval: "1s", reportURI: "\(collector.origin)/pin-report")
        let agent = try RunningAgent(
            scene, interval: "2s", timeout: "1s", checkURL: checkURL, endpoints: pinned.endpoints, policies: pinned.policies,
            everyProbe: true)

        let verdict = try await agent.connectivity(expected)
        #expect(verdict["level"] as? String == level)
        let held = try await agent.endpoint("external", "unreachable")
        #expect(held["cause"] as? String == plainCause)
        #expect(held["connectivity"] as? String == expected)
        // The genuine server passes: the pinned endpoint is probed whatever the verdict.
        try await agent.endpoint("pinned", "up")

        // The attacker on the path takes over the pinned endpoint too.
        let mark = agent.events.all.count
        Shell.kill(pinnedServer)
        pinnedServer = try setup.startServer(scene.network, leaf: "rogue", chain: ["otherinter"])
        let failure = try await agent.events.wait(for: "pin.failure", after: mark)
        #expect(failure["level"] as? String == "error")
        #expect(failure["enforced"] as? Bool == true)
        #expect(failure["connectivity"] as? String == expected)
        #expect(failure["hostname"] as? String == "valid.test")
        #expect(failure["validation-result"] as? Int == 1)
        let rejected = try await agent.events.wait(for: "probe.completed", after: mark) {
            $0["endpoint"] as? String == "pinned" && $0["error_category"] as? String == "policy_rejected"
        }
        #expect(rejected["connectivity"] as? String == expected)
        let down = try await agent.endpoint("pinned", "down", after: mark)
        #expect(down["level"] as? String == "error")
        #expect(down["cause"] as? String == "probe_failed")
        #expect(down["connectivity"] as? String == expected)

        // Sent to the collector on the LAN.
        let delivered = try await agent.events.wait(for: "report.delivered", after: mark)
        #expect(delivered["endpoint"] as? String == "pinned")
        let report = try #require(collector.requests.first { $0.method == "POST" && $0.path == "/pin-report" })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(report.body.utf8)) as? [String: Any])
        #expect(body["hostname"] as? String == "valid.test")
        #expect(body["validation-result"] as? Int == 1)

        // Counted, and shown as down under the attacker's verdict.
        let counted = "pinpath_pin_failures_total{endpoint=\"pinned\",enforced=\"true\"} "
        let isCounted: (String) -> Bool = { text in
            text.split(separator: "\n").contains { $0.hasPrefix(counted) && (Double($0.dropFirst(counted.count)) ?? 0) >= 1 }
        }
        let metrics = await agent.metrics(until: isCounted)
        #expect(isCounted(metrics), "\(metrics)")
        #expect(metrics.contains("pinpath_endpoint_state{endpoint=\"pinned\",state=\"unreachable\"} 0"))
        #expect(metrics.contains("pinpath_connectivity_status{state=\"\(expected)\"} 1"))
        #expect(
            !agent.events.of("endpoint.state_changed").contains {
                $0["endpoint"] as? String == "pinned" && $0["state"] as? String == "unreachable"
            }, "a verdict from the wire never holds a TLS endpoint")
        try await agent.stop()
        return verdict
    }

    @Test(
        """
        Issue 25: the check answered with a 302 by an attacker who also intercepts a pinned endpoint: portal, and the pin failure \
        is reported in full (event at level error with the state, counter, collector); the endpoint is down, never unreachable
        """)
    func plainCheckAnsweredByTheAttacker() async throws {
        let verdict = try await interceptPinnedEndpoint(
            checkURL: Self.checkURL, verdict: "portal", level: "warning", plainCause: "captive_portal")
        #expect(verdict["reason"] as? String == "redirected (302) to portal.example")
    }

    @Test(
        """
        An https check on a private CA is held to the policy whose hosts match it: full with the genuine server, \
        intercepted (policy_rejected) with a chain from another CA the store trusts
        """)
    func httpsCheckUnderItsPolicy() async throws {
        let scene = try Scene(mode: "open")
        defer { scene.remove() }
        try scene.network.hosts("\(Self.internet) valid.test\n")
        let setup = AgentTests()
        let checkPort = 8443
        var server = try setup.startServer(scene.network, leaf: "valid", chain: ["inter"], port: checkPort)
        defer { Shell.stopIfRunning(server) }
        let pins = try TestPKI.shared.chain(["inter", "root"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let policies = """
            policies:
              check-pins:
                hosts: [valid.test]
                mode: public_key
                pins: [\(pins)]
                ca_file: \(TestPKI.shared.path("store"))
            """
        // `openssl s_server -www` answers 200 with a page.
        let agent = try RunningAgent(
            scene, interval: "2s", timeout: "1s", checkURL: "https://valid.test:\(checkPort)/", checkExpect: "status: 200",
            policies: policies)
        let full = try await agent.connectivity("full")
        #expect(full["reason"] as? String == "answered 200 as expected")

        let mark = agent.events.all.count
        Shell.kill(server)
        server = try setup.startServer(scene.network, leaf: "rogue", chain: ["otherinter"], port: checkPort)
        let intercepted = try await agent.connectivity("intercepted", after: mark)
        #expect(intercepted["level"] as? String == "error")
        #expect((intercepted["reason"] as? String)?.hasPrefix("policy_rejected: ") == true, "\(intercepted)")
        try await agent.stop()
    }

    @Test(
        """
        Issue 25: an https check answered with a certificate from an untrusted CA: intercepted (level error), plain endpoints held \
        with connectivity_intercepted, and the pinned endpoint's interception reported in full
        """)
    func httpsCheckIntercepted() async throws {
        let checkPort = 8443
        let verdict = try await interceptPinnedEndpoint(
            checkURL: "https://valid.test:\(checkPort)/generate_204", verdict: "intercepted", level: "error",
            plainCause: "connectivity_intercepted",
            checkServer: { network in try AgentTests().startServer(network, leaf: "untrusted", chain: ["rogueroot"], port: checkPort) })
        #expect((verdict["reason"] as? String)?.hasPrefix("tls_invalid: ") == true, "\(verdict)")
    }

    @Test(
        "Issue 25: an attacker who stalls the check for its whole timeout delays no TLS probe: the pinned endpoint is up before any verdict"
    )
    func stalledCheck() async throws {
        let scene = try Scene(mode: "stall")
        defer { scene.remove() }
        try scene.network.hosts("\(Self.internet) valid.test\n")
        let server = try AgentTests().startServer(scene.network, leaf: "valid", chain: ["inter"])
        defer { Shell.stopIfRunning(server) }
        // An interval of 5 minutes: only the start's burst can probe it within the 15 s the test waits.
        let pinned = try Self.pinnedEndpoint(interval: "5m")
        let agent = try RunningAgent(scene, interval: "60s", timeout: "30s", endpoints: pinned.endpoints, policies: pinned.policies)

        let up = try await agent.endpoint("pinned", "up")
        #expect(up["connectivity"] is NSNull, "no verdict yet")
        #expect(agent.events.of("connectivity.changed").isEmpty, "the check is still stalled")
        try await agent.stop()
    }

    // MARK: pinpath status --connectivity

    func status(_ scene: Scene, _ arguments: [String], url: String = checkURL) throws -> Shell.Result {
        try Shell.run(["ip", "netns", "exec", scene.network.host, Shell.pinpath, "status", "--connectivity", url] + arguments)
    }

    @Test("pinpath status --connectivity: portal and full, as text and JSON; with --check, exit 1 unless full")
    func statusCommand() throws {
        let scene = try Scene(mode: "portal")
        defer { scene.remove() }

        let text = try status(scene, [])
        #expect(text.status == 0)
        #expect(text.stdout.contains("connectivity: portal (redirected (302) to portal.example) via \(Self.checkURL)\n"), "\(text.stdout)")
        #expect(try status(scene, ["--check"]).status == 1)
        let json = try status(scene, ["--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let connectivity = try #require(object["connectivity"] as? [String: Any])
        #expect(connectivity["state"] as? String == "portal")
        #expect(connectivity["url"] as? String == Self.checkURL)
        #expect(object["status"] as? String == "reachable")

        try scene.setMode("open")
        let open = try status(scene, ["--check", "--json"])
        #expect(open.status == 0)
        let openObject = try #require(try JSONSerialization.jsonObject(with: Data(open.stdout.utf8)) as? [String: Any])
        #expect((openObject["connectivity"] as? [String: Any])?["state"] as? String == "full")
        #expect(try status(scene, ["--check"]).stdout.contains("connectivity: full (answered 204 as expected)"))
        #expect(!(json.stdout + text.stdout).contains("s3cret"))
    }

    @Test("pinpath status --connectivity through an https URL answered with an untrusted certificate: intercepted; with --check, exit 1")
    func statusIntercepted() throws {
        let scene = try Scene(mode: "open")
        defer { scene.remove() }
        try scene.network.hosts("\(Self.internet) valid.test\n")
        let server = try AgentTests().startServer(scene.network, leaf: "untrusted", chain: ["rogueroot"], port: 8443)
        defer { Shell.stopIfRunning(server) }
        let url = "https://valid.test:8443/generate_204"

        let text = try status(scene, [], url: url)
        #expect(text.status == 0)
        #expect(text.stdout.contains("connectivity: intercepted (tls_invalid: "), "\(text.stdout)")
        #expect(try status(scene, ["--check"], url: url).status == 1)
        let json = try status(scene, ["--json"], url: url)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect((object["connectivity"] as? [String: Any])?["state"] as? String == "intercepted")
    }

    /// A loopback server in the host namespace that reads each ClientHello and cuts the handshake off before any
    /// certificate: `reset` (RST), `close` (an end of stream) or `plaintext` (an HTTP answer: OpenSSL's "wrong
    /// version number"). A reset before the ClientHello is a failed connect, `limited` already.
    static let handshakeCutter = """
        import socket, struct, sys
        port, mode = int(sys.argv[1]), sys.argv[2]
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(16)
        while True:
            connection, _ = listener.accept()
            connection.recv(4096)
            if mode == "reset":
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif mode == "plaintext":
                connection.sendall(b"HTTP/1.1 400 Bad Request\\r\\nContent-Length: 0\\r\\n\\r\\n")
            connection.close()
        """

    @Test(
        """
        Issue 25 (round 2): pinpath status --connectivity against an https server that resets, closes or answers in plaintext         before any certificate: limited with the TLS error as its reason, never intercepted; with --check, exit 1
        """,
        arguments: ["reset", "close", "plaintext"])
    func statusHandshakeCutOff(mode: String) throws {
        let network = try TestNetwork()
        defer { network.remove() }
        let port = 9601
        try network.spawn(in: network.host, ["python3", "-c", Self.handshakeCutter, "\(port)", mode])
        try network.waitForListener(in: network.host, "127.0.0.1", port)
        let url = "https://127.0.0.1:\(port)/generate_204"
        func status(_ arguments: [String]) throws -> Shell.Result {
            try Shell.run(["ip", "netns", "exec", network.host, Shell.pinpath, "status", "--connectivity", url] + arguments)
        }

        let text = try status([])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("connectivity: limited (tls_failed: GET \(url): "), "\(text.stdout)")
        #expect(!text.stdout.contains("intercepted"), "\(text.stdout)")
        #expect(try status(["--check"]).status == 1)
        let json = try status(["--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let connectivity = try #require(object["connectivity"] as? [String: Any])
        #expect(connectivity["state"] as? String == "limited")
        #expect((connectivity["reason"] as? String)?.hasPrefix("tls_failed: ") == true, "\(connectivity)")
    }

    @Test("pinpath status --connectivity with a URL that is not http(s): a usage error naming it")
    func statusBadURL() throws {
        let result = try Shell.run([Shell.pinpath, "status", "--connectivity", "ftp://192.0.2.1/x?token=t0ken"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--connectivity: \"ftp://192.0.2.1/x\" is not an http:// or https:// URL"), "\(result.stderr)")
        #expect(!result.stderr.contains("t0ken"))
    }
}
