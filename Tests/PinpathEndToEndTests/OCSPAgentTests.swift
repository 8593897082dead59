import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// `revocation: ocsp` in `pinpath run`, as a process: a pinned endpoint whose leaf its responder says is
/// revoked fails with the `revoked` category, the metrics show the status (`probe_ssl_ocsp_status`) and the
/// answer's nextUpdate, and `revocation.checked` is written once per change of status, not once per probe.
@Suite("OCSP in the agent", .serialized)
struct OCSPAgentTests {
    @Test("pinpath run: revoked fails as revoked, the metric says so, and revocation.checked comes once per status")
    func agent() async throws {
        let pki = try #require(OCSPResponderPKI.shared)
        let directory = try TemporaryDirectory()
        var servers: [TLSServer] = []
        defer { for server in servers { server.stop() } }
        for leaf in ["revoked", "good", "unreachable"] {
            servers.append(
                try TLSServer(
                    certificate: pki.file("\(leaf).pem"), key: pki.file("\(leaf).key"), chain: [pki.file("inter.pem")],
                    in: directory.path))
        }
        let revokedPin = try #require(try Certificate.certificates(contentsOf: pki.file("revoked.pem")).first).spkiPin
        try """
        events: { output: stdout, probes: all }
        metrics: { textfile: \(directory.file("pinpath.prom")) }
        policies:
          pinned:
            mode: public_key
            pins: ["\(revokedPin)"]
            require_backup_pin: false
            ca_file: \(pki.file("root.pem"))
            revocation: ocsp
          plain:
            mode: none
            ca_file: \(pki.file("root.pem"))
            revocation: ocsp
          soft:
            mode: none
            ca_file: \(pki.file("root.pem"))
            revocation: ocsp
            soft_fail: true
        endpoints:
          - { name: revoked, url: "https://127.0.0.1:\(servers[0].port)/", policy: pinned, interval: 1s, timeout: 1s }
          - { name: good, url: "https://127.0.0.1:\(servers[1].port)/", policy: plain, interval: 1s, timeout: 1s }
          - { name: unreachable, url: "https://127.0.0.1:\(servers[2].port)/", policy: soft, interval: 1s, timeout: 1s }
        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let check = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        #expect(check.status == 0, "\(check.stderr)")

        // Events on standard output, into a file.
        let output = open(directory.file("events.jsonl"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(output) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: output)
        defer { Shell.stopIfRunning(agent) }
        func events() -> [[String: Any]] {
            (directory.read("events.jsonl") ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        func probes(_ name: String) -> [[String: Any]] {
            events().filter { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == name }
        }
        // The agent writes standard output in blocks when it is a file: the events are read after it stops.
        try await MetricsEndpointTests.wait("the OCSP status of every endpoint in the textfile", timeout: .seconds(30)) {
            let metrics = directory.read("pinpath.prom") ?? ""
            return ["revoked", "good", "unreachable"].allSatisfy { metrics.contains("probe_ssl_ocsp_status{endpoint=\"\($0)\"") }
        }
        try await Task.sleep(for: .seconds(3))  // a few more probes of each, whose status does not change
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(6)) == 0)
        for name in ["revoked", "good", "unreachable"] {
            #expect(probes(name).count >= 3, "\(name): \(probes(name).count) probes")
        }

        for probe in probes("revoked") {
            #expect(probe["outcome"] as? String == "failure", "\(probe)")
            #expect(probe["error_category"] as? String == "revoked", "\(probe)")
        }
        #expect(probes("good").allSatisfy { $0["outcome"] as? String == "success" }, "\(probes("good"))")
        #expect(probes("unreachable").allSatisfy { $0["outcome"] as? String == "success" }, "\(probes("unreachable"))")

        let checked = events().filter { $0["event"] as? String == "revocation.checked" }
        for (name, status, level) in [("revoked", "revoked", "error"), ("good", "good", "info"), ("unreachable", "unavailable", "warning")]
        {
            let mine = checked.filter { $0["endpoint"] as? String == name }
            #expect(mine.count == 1, "\(name): one revocation.checked for a status that did not change: \(mine)")
            #expect(mine.first?["status"] as? String == status, "\(mine)")
            #expect(mine.first?["level"] as? String == level, "\(mine)")
            #expect(mine.first?["previous_status"] is NSNull, "\(mine)")
        }
        #expect(checked.first { $0["endpoint"] as? String == "unreachable" }?["soft_failed"] as? Bool == true)

        let metrics = try #require(directory.read("pinpath.prom"))
        for line in [
            #"probe_ssl_ocsp_status{endpoint="revoked",status="revoked"} 1"#,
            #"probe_ssl_ocsp_status{endpoint="revoked",status="good"} 0"#,
            #"probe_ssl_ocsp_status{endpoint="good",status="good"} 1"#,
            #"probe_ssl_ocsp_status{endpoint="unreachable",status="unavailable"} 1"#,
        ] {
            #expect(metrics.contains(line), "\(line) in \(metrics)")
        }
        #expect(metrics.contains(#"probe_ssl_ocsp_next_update_timestamp_seconds{endpoint="good"}"#), "\(metrics)")
        let promtool = try ExpositionReaders.promtoolCheck(metrics)
        #expect(promtool.status == 0, "promtool refuses the textfile: \(promtool.stderr)")
    }

    @Test(
        "check-config: soft_fail beside another revocation mode, or not a boolean, is a configuration error (exit 78) at its line",
        arguments: [
            ("revocation: stapled\n    soft_fail: true", "6:16", "ocsp only (this policy has revocation: stapled)"),
            ("soft_fail: true", "5:16", "soft_fail applies to revocation: ocsp only (this policy has revocation: none)"),
            ("revocation: ocsp\n    soft_fail: maybe", "6:16", "soft_fail"),
        ] as [(String, String, String)])
    func softFailConfiguration(_ lines: String, _ position: String, _ part: String) throws {
        let directory = try TemporaryDirectory()
        try "endpoints: []\npolicies:\n  p:\n    mode: none\n    \(lines)\n".write(
            toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        #expect(result.status == 78, "\(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("pinpath.yaml:\(position): policies.p") && result.stderr.contains(part), "\(result.stderr)")
    }
}
