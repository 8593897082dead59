import Foundation
import PinpathTestSupport
import Testing

/// Issue 14, item 2, on the kernel: the connectivity verdict against real servers in namespaces.
///
///     [host: pa0 10.99.0.1/24, default via .254] ── veth ── [gateway: pb0 10.99.0.254/24, 198.51.100.7 on lo]
///
/// "The internet" is 198.51.100.7:8080 in the gateway namespace, reached through the default route: a small
/// Python server that is either a captive portal (every request gets a 302 to http://portal.example/login
/// with a token in the query) or open (every request gets 204), switched by a file, and logging every
/// request. A LAN service (10.99.0.254:8081, on the host's connected subnet) answers 200 throughout. A dead
/// upstream is a blackhole route in the gateway: the host's route is present, its SYNs vanish.
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
        /// (a hostile portal's), `open` a 204.
        static let server = """
            import sys, http.server
            address, port, mode_file, log_file = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
            class Handler(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    with open(log_file, "a") as log:
                        log.write(self.requestline + "\\n")
                    mode = open(mode_file).read().strip()
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
            http.server.ThreadingHTTPServer((address, port), Handler).serve_forever()
            """
    }

    /// The agent in the host namespace on a configuration with the check and two endpoints: one on "the
    /// internet", one on the LAN.
    final class RunningAgent {
        let events: AgentTests.Events
        let metricsFile: String
        private let pid: pid_t
        private var stopped = false

        init(_ scene: Scene, interval: String, timeout: String) throws {
            let configuration = "\(scene.directory)/pinpath.yaml"
            metricsFile = "\(scene.directory)/pinpath.prom"
            try """
            events: { output: stdout }
            metrics: { textfile: \(metricsFile) }
            connectivity:
              url: \(ConnectivityNamespaceTests.checkURL)
              interval: \(interval)
              timeout: \(timeout)
            endpoints:
              - name: external
                url: http://\(ConnectivityNamespaceTests.internet):\(ConnectivityNamespaceTests.port)/service
                interval: 1s
              - name: lan
                url: http://\(TestNetwork.gatewayAddress):\(ConnectivityNamespaceTests.lanPort)/
                interval: 1s
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
            events = AgentTests.Events(file: "\(scene.directory)/events.jsonl")
            let output = open(events.file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            let errors = open("\(scene.directory)/agent.stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            defer {
                close(output)
                close(errors)
            }
            pid = try Shell.spawn(
                ["ip", "netns", "exec", scene.network.host, Shell.pinpath, "run", "--config", configuration], stdout: output,
                stderr: errors)
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
        // The textfile is rewritten every 5 s at most.
        var metrics = ""
        for _ in 0..<60 where !metrics.contains("pinpath_connectivity_status") {
            try await Task.sleep(for: .milliseconds(250))
            metrics = (try? String(contentsOfFile: agent.metricsFile, encoding: .utf8)) ?? ""
        }
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
        #expect((limited["reason"] as? String)?.hasPrefix("timeout: ") == true, "\(limited)")
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

    // MARK: pinpath status --connectivity

    func status(_ scene: Scene, _ arguments: [String]) throws -> Shell.Result {
        try Shell.run(["ip", "netns", "exec", scene.network.host, Shell.pinpath, "status", "--connectivity", Self.checkURL] + arguments)
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

    @Test("pinpath status --connectivity with a URL that is not http(s): a usage error naming it")
    func statusBadURL() throws {
        let result = try Shell.run([Shell.pinpath, "status", "--connectivity", "ftp://192.0.2.1/x?token=t0ken"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--connectivity: \"ftp://192.0.2.1/x\" is not an http:// or https:// URL"), "\(result.stderr)")
        #expect(!result.stderr.contains("t0ken"))
    }
}
