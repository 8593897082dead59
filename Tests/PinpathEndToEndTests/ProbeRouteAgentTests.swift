import Foundation
import PinpathTestSupport
import Testing

/// `/probe` on a running `pinpath run`, asked with curl and plain TCP clients: the requests the route refuses
/// itself, its counters in `/metrics`, `metrics.probe_max_in_flight` in the configuration, and (with the agent's
/// modules) the scrape timeout header and the in-flight limit against a server that never answers.
@Suite("/probe on pinpath run", .serialized)
struct ProbeRouteAgentTests {
    final class Scene {
        let directory: TemporaryDirectory
        let listen: String
        let port: UInt16
        let silent: SilentServer
        var agent: pid_t = 0

        init(extra: String = "") throws {
            directory = try TemporaryDirectory()
            silent = try SilentServer()
            port = try TLSServer.freePort()
            listen = "127.0.0.1:\(port)"
            try """
            events: { output: \(directory.file("events.jsonl")) }
            reachability: { targets: [127.0.0.1] }
            \(extra)
            metrics:
              listen: "\(listen)"

            """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        }

        /// Starts the agent; with `descriptorLimit`, under `prlimit --nofile` (its pid is the agent's: prlimit execs it).
        func start(descriptorLimit: Int? = nil) async throws {
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            let limit = descriptorLimit.map { ["/usr/bin/prlimit", "--nofile=\($0)", "--"] } ?? []
            agent = try Shell.spawn(limit + [Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
            try await MetricsEndpointTests.wait("the listener") { try MetricsEndpointTests.fetch(listen, "/healthz")?.status == 200 }
        }

        func fetch(_ path: String, _ options: [String] = []) throws -> MetricsEndpointTests.Answer {
            try #require(try MetricsEndpointTests.fetch(listen, path, options), "no answer to \(path)")
        }

        deinit {
            if agent > 0 { Shell.kill(agent) }
            silent.stop()
        }
    }

    @Test("Malformed queries, a bad timeout header and an unknown module are 400 with one line; HEAD, POST; counted in /metrics")
    func refusedRequests() async throws {
        let scene = try Scene(extra: "modules:\n  internal_db_check: { kind: tcp, timeout: 2s }\n")
        try await scene.start()
        let cases: [(path: String, options: [String], reason: String?)] = [
            ("/probe?module=tcp", [], "target: missing (add target=… to the query)"),
            ("/probe?target=127.0.0.1:1", [], "module: missing (add module=… to the query)"),
            ("/probe?target=127.0.0.1%3:1&module=tcp", [], "target: target has a % not followed by two hexadecimal digits"),
            ("/probe?target=127.0.0.1:1&module=tcp&module=tls", [], "module: given more than once"),
            ("/probe?target=127.0.0.1:1&module=tcp&debug=1", [], "debug: expected true or false"),
            (
                "/probe?target=127.0.0.1:1&module=tcp", ["-H", "X-Prometheus-Scrape-Timeout-Seconds: -2"],
                "X-Prometheus-Scrape-Timeout-Seconds: expected a number of seconds, 0 or more"
            ),
            (
                "/probe?target=127.0.0.1:1&module=tcp",
                ["-H", "X-Prometheus-Scrape-Timeout-Seconds: 2", "-H", "X-Prometheus-Scrape-Timeout-Seconds: 30"],
                "X-Prometheus-Scrape-Timeout-Seconds: given more than once"
            ),
            // Well formed, other parameters ignored: the agent has no such module, and does not say which it has.
            (
                "/probe?target=127.0.0.1:1&module=no-such-module&hostname=x", [],
                #"unknown module "no-such-module" (pinpath check-config lists the modules)"#
            ),
            // A quote and a backslash in the name are escaped: the quoted name cannot seem to end early.
            (
                "/probe?target=127.0.0.1:1&module=a%22b%5Cc", [],
                #"unknown module "a\"b\\c" (pinpath check-config lists the modules)"#
            ),
        ]
        for (path, options, reason) in cases {
            let answer = try scene.fetch(path, options)
            #expect(answer.status == 400, "\(path): \(answer.status) \(answer.body)")
            #expect(answer.body.hasSuffix("\n") && answer.body.dropLast().allSatisfy { $0 != "\n" }, "\(path): \(answer.body)")
            if let reason { #expect(answer.body == reason + "\n") }
        }
        let head = try scene.fetch("/probe?module=tcp", ["-I"])
        #expect(head.status == 400 && head.body.isEmpty)
        let post = try scene.fetch("/probe?target=127.0.0.1:1&module=tcp", ["-X", "POST"])
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")

        let metrics = try scene.fetch("/metrics").body
        #expect(MetricsEndpointTests.value("pinpath_probe_bad_requests_total", in: metrics) == Double(cases.count + 1))
        #expect(MetricsEndpointTests.value("pinpath_probe_in_flight", in: metrics) == 0)
        #expect(MetricsEndpointTests.value("pinpath_probe_over_limit_total", in: metrics) == 0)
        #expect(!metrics.contains("no-such-module"), "a module the agent does not have is never a label")
        let listen = try Shell.run([Shell.pinpath, "check-config", "--config", scene.directory.file("pinpath.yaml")]).stdout
        #expect(
            listen.contains("listen:    \(scene.listen) (/metrics, /healthz, /readyz, /probe, /api/v1/status, the status page /)"),
            "\(listen)")
        #expect(try ExpositionReaders.promtoolCheck(metrics).status == 0)
    }

    @Test("metrics.probe_max_in_flight: a whole number from 1 to 4096, else check-config names it", arguments: ["0", "4097", "many"])
    func maxInFlightConfiguration(value: String) throws {
        let scene = try Scene()
        let yaml = try String(contentsOfFile: scene.directory.file("pinpath.yaml"), encoding: .utf8)
        try (yaml + "  probe_max_in_flight: \(value)\n").write(
            toFile: scene.directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", scene.directory.file("pinpath.yaml")])
        #expect(result.status == 78)
        #expect(result.stderr.contains("metrics.probe_max_in_flight"), "\(result.stderr)")
    }

    /// Needs the agent's modules (issue 26, P1a): the placeholder probe answers 400 to every module.
    @Test(
        "With a module: the timeout header bounds a probe of a silent server, and above the limit 503 with Retry-After; a client that goes frees its slot"
    )
    func timeoutAndLimit() async throws {
        let scene = try Scene(
            extra:
                "modules:\n  tcp_slow: { kind: tcp, timeout: 20s, send: \"ping\\n\", expect: { banner: pong }, targets: [\"127.0.0.0/8\"] }\n"
        )
        let yaml = try String(contentsOfFile: scene.directory.file("pinpath.yaml"), encoding: .utf8)
        try (yaml + "  probe_max_in_flight: 4\n").write(toFile: scene.directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try await scene.start()
        let target = "/probe?target=127.0.0.1:\(scene.silent.port)&module=tcp_slow"

        // The scraper's 2 s minus 0.5 s, not the module's 20 s.
        let started = ContinuousClock.now
        let bounded = try scene.fetch(target, ["-H", "X-Prometheus-Scrape-Timeout-Seconds: 2"])
        let elapsed = ContinuousClock.now - started
        #expect(bounded.status == 200, "\(bounded.body)")
        #expect(MetricsEndpointTests.value("probe_success", in: bounded.body) == 0)
        #expect(bounded.body.contains(#"pinpath_probe_failure_info{category="timed_out"} 1"#), "\(bounded.body)")
        #expect(elapsed < .seconds(10), "the probe took \(elapsed): the header's deadline was not applied")

        // One client's share of 4 is 3: the last place stays for another client.
        var held = try (0..<3).map { _ in try ProbeRouteServerTests.HeldRequest(port: scene.port, path: target) }
        defer { for request in held { request.close() } }
        try await MetricsEndpointTests.wait("3 probes in flight") {
            MetricsEndpointTests.value("pinpath_probe_in_flight", in: try scene.fetch("/metrics").body) == 3
        }
        let over = try scene.fetch(target)
        #expect(over.status == 503 && over.headers["retry-after"] == "1")
        held.removeFirst().close()
        try await MetricsEndpointTests.wait("the slot freed") {
            MetricsEndpointTests.value("pinpath_probe_in_flight", in: try scene.fetch("/metrics").body) == 2
        }
    }

    /// The attacker's review of issue 26: a `/probe` connection used to give up its slot for good, so clients that
    /// asked and held their sockets open took a descriptor of the agent each until its 1,024 ran out, and `/healthz`
    /// went unanswered. Now it holds no slot only while its probe runs.
    @Test("A flood of /probe requests held open takes no more of the agent's descriptors than its slots; /healthz answers")
    func probeFloodHeldOpen() async throws {
        let scene = try Scene(extra: "modules:\n  tcp_quick: { kind: tcp, timeout: 2s }\n")
        try await scene.start(descriptorLimit: 1024)
        let before = try Self.descriptors(of: scene.agent)
        // Two clients of another local user, each connecting, asking and keeping up to 900 sockets open, for 10 s.
        let script = #"""
            import socket, sys, time, resource
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
            port, end = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
            request = b"GET /probe?target=a&module=b HTTP/1.1\r\nHost: localhost\r\n\r\n"
            held, opened = [], 0
            while time.monotonic() < end:
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=2)
                    s.sendall(request)
                    held.append(s)
                    opened += 1
                except OSError:
                    time.sleep(0.01)
                if len(held) >= 900:
                    held.pop(0).close()
            print(opened)
            """#
        let pids = try (0..<2).map { _ in
            try Shell.spawn([
                "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script,
                String(scene.port), "10",
            ])
        }
        defer { for pid in pids { Shell.kill(pid) } }
        var most = before
        var healthz: [Int] = []
        let end = ContinuousClock.now + .seconds(9)
        try await Task.sleep(for: .seconds(1))
        while ContinuousClock.now < end {
            most = max(most, try Self.descriptors(of: scene.agent))
            healthz.append(try MetricsEndpointTests.fetch(scene.listen, "/healthz", ["--max-time", "2"])?.status ?? 0)
            try await Task.sleep(for: .milliseconds(200))
        }
        print("/probe flood held open: the agent's descriptors \(before) before, at most \(most) during; /healthz \(healthz)")
        // The listener's 32 slots and the default 64 probes in flight, and a few sockets of the agent's own work.
        #expect(most <= before + 32 + 64 + 16, "the agent's descriptors reached \(most)")
        #expect(!healthz.isEmpty && healthz.allSatisfy { $0 == 200 }, "/healthz during the flood: \(healthz)")
    }

    /// The number of descriptors process `pid` has open.
    static func descriptors(of pid: pid_t) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }
}
