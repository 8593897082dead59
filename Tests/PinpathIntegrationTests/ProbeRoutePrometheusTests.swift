import Foundation
import PinpathTestSupport
import Testing

/// Issue 26's acceptance test: a real Prometheus (Debian's `prometheus`) drives `pinpath run`'s `/probe` through
/// blackbox_exporter's standard relabelling for file_sd targets, everything inside a network namespace made for
/// the test: a good pinned https server, the same server under a wrong pin, a closed port, a `tls://` target, and a
/// target the namespace has no route to. The test reads Prometheus' HTTP API for `probe_success` and
/// `pinpath_probe_failure_info` per target, and finds the wrong pin's `pin.failure` event with its module and target.
///
/// It needs the agent's modules (`modules:` in the configuration): on a branch with only the route (and the
/// placeholder probe answering 400) the agent refuses the configuration and the test fails.
@Suite(
    "/probe driven by a real Prometheus", .serialized, .enabled(if: Capability.namespaces, Capability.reason),
    .enabled(if: PrometheusServer.executable != nil, "needs prometheus (Debian: prometheus; scripts/packages.sh)"))
struct ProbeRoutePrometheusTests {
    /// The SPKI pin of a certificate file, as `pinpath pins` and TrustKit write it (base64 SHA-256).
    static func pin(_ certificate: String) throws -> String {
        try Shell.check([
            "sh", "-c",
            "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The pin of a key made now and thrown away: a backup pin, or a wrong one, that nothing serves.
    static func unusedPin() throws -> String {
        try Shell.check([
            "sh", "-c",
            "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 | openssl pkey -pubout -outform der | openssl dgst -sha256 -binary | base64",
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Polls until `condition` holds; fails after `timeout` (a bound on a hang, not a timing assertion).
    static func wait(_ what: String, timeout: Duration, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw ShellError(description: "timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    /// The value of `expression` in the namespace's Prometheus, or nil while it has none.
    static func query(_ network: TestNetwork, port: Int, _ expression: String) throws -> Double? {
        let result = try Shell.run([
            "ip", "netns", "exec", network.host, "curl", "-sf", "--max-time", "5", "http://127.0.0.1:\(port)/api/v1/query",
            "--data-urlencode", "query=\(expression)",
        ])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let data = object["data"] as? [String: Any], let samples = data["result"] as? [[String: Any]],
            let value = samples.first?["value"] as? [Any], let text = value.last as? String
        else { return nil }
        return Double(text)
    }

    @Test("probe_success and the failure category per target as Prometheus stores them; the wrong pin's pin.failure event")
    func prometheusDrivesProbe() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        let directory = try TemporaryDirectory()
        // Nothing routes to 198.51.100.9 from the host namespace: the gate answers without a connection.
        try network.ip(network.host, "route add unreachable 198.51.100.9/32")

        let localhost = LocalhostPKI.shared
        let tlsPort = 8443
        let closedPort = 8444
        let listenPort = 9818
        let prometheusPort = 9090
        try network.spawn(
            in: network.host,
            [
                "openssl", "s_server", "-quiet", "-accept", "127.0.0.1:\(tlsPort)", "-cert", localhost.path("valid"), "-key",
                localhost.path("valid", "key"), "-cert_chain", TestPKI.shared.path("inter"), "-www",
            ])
        try network.waitForListener(in: network.host, "127.0.0.1", tlsPort)

        let store = TestPKI.shared.path("store")
        let goodPin = try Self.pin(TestPKI.shared.path("inter"))
        let backupPin = try Self.unusedPin()
        let wrongPins = (try Self.unusedPin(), try Self.unusedPin())
        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        policies:
          pinned: { mode: public_key, ca_file: \(store), pins: ["sha256/\(goodPin)", "sha256/\(backupPin)"] }
          wrong: { mode: public_key, ca_file: \(store), pins: ["sha256/\(wrongPins.0)", "sha256/\(wrongPins.1)"] }
        modules:
          https_pinned: { policy: pinned, timeout: 3s, targets: ["127.0.0.0/8", "198.51.100.0/24"] }
          https_wrong_pin: { policy: wrong, timeout: 3s, targets: ["127.0.0.0/8"] }
          tls_pinned: { policy: pinned, timeout: 3s, targets: ["127.0.0.0/8"] }
        metrics:
          listen: "127.0.0.1:\(listenPort)"

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)

        // blackbox_exporter's standard relabelling, one job per module, targets from file_sd.
        let jobs: [(module: String, targets: [String])] = [
            ("https_pinned", ["https://localhost:\(tlsPort)/", "https://localhost:\(closedPort)/", "https://198.51.100.9/"]),
            ("https_wrong_pin", ["https://localhost:\(tlsPort)/"]),
            ("tls_pinned", ["tls://localhost:\(tlsPort)"]),
        ]
        var configuration = "global: { scrape_interval: 2s, scrape_timeout: 2s }\nscrape_configs:\n"
        for job in jobs {
            let file = directory.file("\(job.module).json")
            let targets = job.targets.map { "\"\($0)\"" }.joined(separator: ", ")
            try "[{\"targets\": [\(targets)]}]".write(toFile: file, atomically: true, encoding: .utf8)
            configuration += """
                  - job_name: \(job.module)
                    metrics_path: /probe
                    params: { module: [\(job.module)] }
                    file_sd_configs: [{ files: ["\(file)"] }]
                    relabel_configs:
                      - { source_labels: [__address__], target_label: __param_target }
                      - { source_labels: [__param_target], target_label: instance }
                      - { target_label: __address__, replacement: "127.0.0.1:\(listenPort)" }

                """
        }
        try configuration.write(toFile: directory.file("prometheus.yml"), atomically: true, encoding: .utf8)

        let agent = try network.startAgent(
            configuration: directory.file("pinpath.yaml"), events: directory.file("agent.out"), errors: directory.file("agent.err"))
        defer { Shell.kill(agent) }
        do {
            try network.waitForListener(in: network.host, "127.0.0.1", listenPort)
        } catch {
            let errors = (try? String(contentsOfFile: directory.file("agent.err"), encoding: .utf8)) ?? ""
            throw ShellError(description: "the agent does not listen: \(error); its standard error: \(errors)")
        }
        let prometheus = try #require(PrometheusServer.executable)
        try FileManager.default.createDirectory(atPath: directory.file("tsdb"), withIntermediateDirectories: true)
        try network.spawn(
            in: network.host,
            [
                prometheus, "--config.file=\(directory.file("prometheus.yml"))", "--storage.tsdb.path=\(directory.file("tsdb"))",
                "--web.listen-address=127.0.0.1:\(prometheusPort)",
            ])
        try network.waitForListener(in: network.host, "127.0.0.1", prometheusPort)

        // instance → (probe_success, the failure category or nil).
        let expected: [(job: String, instance: String, success: Double, category: String?)] = [
            ("https_pinned", "https://localhost:\(tlsPort)/", 1, nil),
            ("https_pinned", "https://localhost:\(closedPort)/", 0, "connect_failed"),
            ("https_pinned", "https://198.51.100.9/", 0, "unreachable"),
            ("https_wrong_pin", "https://localhost:\(tlsPort)/", 0, "policy_rejected"),
            ("tls_pinned", "tls://localhost:\(tlsPort)", 1, nil),
        ]
        try await Self.wait("every target scraped", timeout: .seconds(60)) {
            try expected.allSatisfy {
                try Self.query(network, port: prometheusPort, #"probe_success{job="\#($0.job)",instance="\#($0.instance)"}"#) != nil
            }
        }
        for target in expected {
            let selector = #"job="\#(target.job)",instance="\#(target.instance)""#
            let success = try Self.query(network, port: prometheusPort, "probe_success{\(selector)}")
            #expect(success == target.success, "\(target.job) \(target.instance): probe_success \(String(describing: success))")
            print("Prometheus: probe_success{\(selector)} = \(success.map { "\($0)" } ?? "none")")
            if let category = target.category {
                let info = try Self.query(
                    network, port: prometheusPort, #"pinpath_probe_failure_info{\#(selector),category="\#(category)"}"#)
                #expect(info == 1, "\(target.job) \(target.instance): no failure category \(category)")
                print("Prometheus: pinpath_probe_failure_info{\(selector),category=\"\(category)\"} = \(info.map { "\($0)" } ?? "none")")
            }
        }
        let events = directory.lines("events.jsonl").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(
            events.contains {
                $0["event"] as? String == "pin.failure" && $0["module"] as? String == "https_wrong_pin"
                    && $0["target"] as? String == "https://localhost:\(tlsPort)/"
            }, "no pin.failure event with module and target")
    }
}
