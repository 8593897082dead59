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

        func start() async throws {
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
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
        let scene = try Scene()
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
            // Well formed, other parameters ignored: the agent has no such module.
            ("/probe?target=127.0.0.1:1&module=no-such-module&hostname=x", [], nil),
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
        let scene = try Scene(extra: "modules:\n  tcp_slow: { kind: tcp, timeout: 20s, send: \"ping\\n\", expect: { banner: pong }, targets: [\"127.0.0.0/8\"] }\n")
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

        var held = try (0..<4).map { _ in try ProbeRouteServerTests.HeldRequest(port: scene.port, path: target) }
        defer { for request in held { request.close() } }
        try await MetricsEndpointTests.wait("4 probes in flight") {
            MetricsEndpointTests.value("pinpath_probe_in_flight", in: try scene.fetch("/metrics").body) == 4
        }
        let over = try scene.fetch(target)
        #expect(over.status == 503 && over.headers["retry-after"] == "1")
        held.removeFirst().close()
        try await MetricsEndpointTests.wait("the slot freed") {
            MetricsEndpointTests.value("pinpath_probe_in_flight", in: try scene.fetch("/metrics").body) == 3
        }
    }
}
