import Foundation
import PinpathTestSupport
import Testing

/// `pinpath check-config`'s summary, read as a reviewer reads it: whether each endpoint's connection is checked
/// with TLS, how TLS starts, and where the metrics go.
@Suite("check-config summary for every kind and metrics setting")
struct CheckConfigSummaryTests {
    let pki = TestPKI.shared

    /// Each kind pinpath probes, with the start of its `effective:` line under a `ca_file` policy.
    static let kinds: [(url: String, extra: String, effective: String)] = [
        ("https://127.0.0.1:22001/", "", "    effective: none, store "),
        ("tls://127.0.0.1:22002", "", "    effective: TLS handshake only: none, store "),
        ("smtp://127.0.0.1:22003", ", starttls: true", "    effective: TLS after STARTTLS (required): none, store "),
        ("imap://127.0.0.1:22004", ", starttls: true", "    effective: TLS after STARTTLS (required): none, store "),
        ("pop3://127.0.0.1:22005", ", starttls: true", "    effective: TLS after STLS (required): none, store "),
        ("ftp://127.0.0.1:22006", ", starttls: true", "    effective: TLS after AUTH (required): none, store "),
        ("smtps://127.0.0.1:22007", "", "    effective: implicit TLS: none, store "),
        ("imaps://127.0.0.1:22008", "", "    effective: implicit TLS: none, store "),
        ("pop3s://127.0.0.1:22009", "", "    effective: implicit TLS: none, store "),
        ("ldaps://127.0.0.1:22010", "", "    effective: implicit TLS: none, store "),
        ("tcp://127.0.0.1:22011", "", "    effective: plain TCP, no TLS"),
        ("http://127.0.0.1:22012/", "", "    effective: plain http, no TLS"),
    ]

    func checkConfig(_ yaml: String, json: Bool = false) throws -> Shell.Result {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try yaml.write(toFile: file, atomically: true, encoding: .utf8)
        return try Shell.run([Shell.pinpath, "check-config", "--config", file] + (json ? ["--json"] : []))
    }

    @Test("Each kind's effective line says whether and how TLS is checked, under the policy that applies")
    func everyKind() throws {
        var yaml = "policies:\n  private: { mode: none, hosts: [\"127.0.0.1\"], ca_file: \(pki.path("store")) }\nendpoints:\n"
        for (index, kind) in Self.kinds.enumerated() {
            yaml += "  - { name: e\(index), url: \"\(kind.url)\"\(kind.extra) }\n"
        }
        let result = try checkConfig(yaml)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        for (index, kind) in Self.kinds.enumerated() {
            let position = try #require(lines.firstIndex { $0.hasPrefix("  e\(index): ") }, "\(result.stdout)")
            let effective = lines[position + 1]
            #expect(effective.hasPrefix(kind.effective), "\(kind.url): \(effective)")
            if kind.effective.hasSuffix("store ") {
                #expect(
                    effective.contains("store \(pki.path("store"))") && effective.hasSuffix("from private (hosts 127.0.0.1)"),
                    "\(effective)")
            }
        }

        let json = try checkConfig(yaml, json: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let endpoints = try #require(object["endpoints"] as? [[String: Any]])
        #expect(endpoints.map { $0["kind"] as? String } == Self.kinds.map { String($0.url.prefix { $0 != ":" }) })
        #expect(endpoints.map { $0["tls"] as? Bool } == Self.kinds.map { !$0.effective.contains("no TLS") })
    }

    @Test("The metrics line names the textfile and the listener, and says none only when neither is set")
    func metricsSettings() throws {
        let endpoint = "endpoints:\n  - { name: api, url: \"https://api.example/\" }\n"
        let cases: [(metrics: String, line: String)] = [
            ("", "metrics:   none"),
            ("metrics: { listen: \"127.0.0.1:9464\" }\n", "metrics:   listen 127.0.0.1:9464"),
            ("metrics: { textfile: /tmp/pinpath.prom }\n", "metrics:   textfile /tmp/pinpath.prom"),
            (
                "metrics: { textfile: /tmp/pinpath.prom, listen: \"127.0.0.1:9464\" }\n",
                "metrics:   textfile /tmp/pinpath.prom, listen 127.0.0.1:9464"
            ),
        ]
        for (metrics, line) in cases {
            let result = try checkConfig(metrics + endpoint)
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains(line), "\(metrics): \(result.stdout)")
        }
    }
}
