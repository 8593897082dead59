import Foundation
import PinpathTestSupport
import Testing

/// The repository's example.
private let exampleConfiguration = Checkout.file("etc/pinpath.yaml")

/// `pinpath check-config`, run as a user would: the binary SwiftPM built next to this test bundle.
@Suite("pinpath check-config")
struct ConfigurationCommandTests {
    @Test("The example is valid: a summary on stdout, exit 0")
    func valid() throws {
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", exampleConfiguration])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.first == "\(exampleConfiguration): valid")
        #expect(lines.contains("endpoints: 2"))
        #expect(lines.contains("targets:   2 (1.1.1.1 2606:4700:4700::1111)"))
    }

    @Test("The connectivity check is summarised (text and JSON) when configured, without its query")
    func connectivity() throws {
        let file = try Self.write(
            """
            connectivity:
              url: http://192.0.2.10/generate_204?key=s3cret
              interval: 5m
            """)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let text = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("connectivity: http://192.0.2.10/generate_204 every 5m, timeout 10s, expect 204, empty\n"))
        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["connectivity"] as? String == "http://192.0.2.10/generate_204 every 5m, timeout 10s, expect 204, empty")
        #expect(!(text.stdout + json.stdout).contains("s3cret"))
    }

    @Test("An invalid file: every problem as a pinpath: error line on stderr, exit 78")
    func invalid() throws {
        let file = try Self.write(
            """
            endpoints:
              - name: api
                url: https://api.example.com/
                interval: 5 minutes
                policy: missing
            """)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(result.status == 78)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr == """
                pinpath: error: \(file):4:15: endpoints[0].interval: "5 minutes" is not a duration (use 300s or 5m)
                pinpath: error: \(file):5:13: endpoints[0].policy: policy "missing" is not defined (there is no policies: section)

                """)
    }

    @Test("--json: one object either way, exit 0 or 78; a failure has the error member every command's --json failure has")
    func json() throws {
        let file = try Self.write("endpoints: [{ name: api, url: \"https://a.test/\", intervall: 1s }]\n")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let bad = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file])
        #expect(bad.status == 78)
        #expect(
            bad.stdout
                == #"{"valid":false,"problems":[{"file":"\#(file)","line":1,"column":50,"key":"endpoints[0].intervall","code":"unknown_key","message":"unknown key \"intervall\"; did you mean \"interval\"?"}],"error":{"category":"config","message":"\#(file):1:50: endpoints[0].intervall: unknown key \"intervall\"; did you mean \"interval\"?","exit_code":78}}"#
                + "\n")
        let good = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", exampleConfiguration])
        #expect(good.status == 0)
        #expect(good.stdout.hasPrefix(#"{"valid":true,"file":"\#(exampleConfiguration)","#))
    }

    @Test("A missing file is a configuration error too (78), and the default path is /etc/pinpath/pinpath.yaml")
    func missing() throws {
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", "/nonexistent/pinpath.yaml"])
        #expect(result.status == 78)
        #expect(result.stderr == "pinpath: error: /nonexistent/pinpath.yaml: cannot read the file: No such file or directory\n")
        let help = try Shell.run([Shell.pinpath, "check-config", "--help"])
        #expect(help.stdout.contains("/etc/pinpath/pinpath.yaml"))
    }

    @Test("A policy that accepts any certificate loads with a warning on stderr and in --json, exit 0")
    func acceptsAnyCertificateWarning() throws {
        let file = try Self.write(
            """
            policies:
              dev-anything:
                mode: none
                allow_invalid_certificates: true
                validates_domain_name: false
            endpoints:
              - { name: dev, url: "https://dev.test/", policy: dev-anything }
            """)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let text = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(text.status == 0)
        #expect(
            text.stderr.hasPrefix(
                """
                pinpath: warning: \(file):2:3: policies.dev-anything: allow_invalid_certificates with validates_domain_name: false \
                and no pins accepts any certificate
                """
            ), "\(text.stderr)")
        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file])
        #expect(
            json.stdout.contains(
                #""warnings":[{"file":"\#(file)","line":2,"column":3,"key":"policies.dev-anything","code":"accepts_any_certificate""#),
            "\(json.stdout)")
    }

    @Test("Pins in pinpath's, curl's and HPKP's spellings load from YAML; another spelling is refused at its line and column")
    func pinSpellings() throws {
        let pki = TestPKI.shared
        let (root, otherRoot, inter) = (try pki.opensslPin("root"), try pki.opensslPin("otherroot"), try pki.opensslPin("inter"))
        let file = try Self.write(
            """
            policies:
              spelled:
                mode: public_key
                pins: ["sha256/\(root)", "sha256//\(otherRoot)", 'pin-sha256="\(inter)"']
            """)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file])
        #expect(json.status == 0, "\(json.stdout)\(json.stderr)")
        #expect(json.stdout.contains(#""name":"spelled","mode":"public_key","pins":3"#), "\(json.stdout)")
        let bad = try Self.write(
            """
            policies:
              spelled:
                mode: public_key
                pins: ["sha256/\(root)", "sha1/\(otherRoot)"]
            """)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let refused = try Shell.run([Shell.pinpath, "check-config", "--config", bad])
        #expect(refused.status == 78)
        #expect(refused.stderr.hasPrefix("pinpath: error: \(bad):4:"), "\(refused.stderr)")
        #expect(refused.stderr.contains("is not sha256/<base64>, sha256//<base64> or pin-sha256="), "\(refused.stderr)")
    }

    @Test("An events file or metrics textfile in a missing directory is a problem at its line and column (exit 78), not a failure at start")
    func outputDirectories() throws {
        let missing = "/nonexistent-\(UUID().uuidString)"
        for (yaml, key, line) in [
            ("events: { output: \(missing)/events.jsonl }\n", "events.output", 1),
            ("endpoints: []\nmetrics:\n  textfile: \(missing)/pinpath.prom\n", "metrics.textfile", 3),
        ] {
            let file = try Self.write(yaml)
            defer { try? FileManager.default.removeItem(atPath: file) }
            let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
            #expect(result.status == 78, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("pinpath: error: \(file):\(line):")
                    && result.stderr.contains("\(key): the directory \(missing) does not exist"),
                "\(result.stderr)")
            let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", file])
            #expect(run.status == 78, "the agent refuses it the same way: \(run.stderr)")
        }
    }

    @Test("An empty configuration is valid with a warning that there is nothing to monitor (exit 0)")
    func emptyConfiguration() throws {
        let file = try Self.write("")
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("pinpath: warning: \(file):1:1: endpoints: no endpoints and no reachability targets"), "\(result.stderr)"
        )
    }

    /// Issue 25, item 3: the author of an included file chooses the text `check-config` and `run` print. A banner,
    /// a `send` line, a pattern that matches nothing and a refused value, holding escape sequences (erase the
    /// line, paint a verdict, write the clipboard through OSC 52) and bidi overrides.
    @Test("Text from the file cannot act on the terminal: the summary, --effective, warnings and problems are escaped")
    func hostileTextEscaped() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try #"include: [ "conf.d/*.yaml", "\e[2Knothing\u202E/*.yaml" ]"#.write(
            toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try #"""
        endpoints:
          - name: banner
            url: tcp://127.0.0.1:9
            send: "\e[2J\e[Hpinpath: all endpoints up"
            expect: { banner: "\e[2K\e[32mvalid\e]52;c;ZXZpbA==\a\u202Etxt" }
        """#.write(toFile: directory.file("conf.d/evil.yaml"), atomically: true, encoding: .utf8)
        let summary = try Shell.run([Shell.pinpath, "check-config", "--effective", "--config", directory.file("pinpath.yaml")])
        #expect(summary.status == 0, "\(summary.stderr)")
        #expect(summary.stdout.contains(#"banner "\x1b[2K\x1b[32mvalid\x1b]52;c;ZXZpbA==\x07\u{202e}txt""#), "\(summary.stdout)")
        #expect(summary.stdout.contains(#"    send: \x1b[2J\x1b[Hpinpath: all endpoints up"#), "\(summary.stdout)")
        #expect(summary.stderr.contains(#"\x1b[2Knothing\u{202e}/*.yaml"#), "the warning names the pattern: \(summary.stderr)")

        try #"""
        endpoints:
          - { name: late, url: "http://127.0.0.1:9/", interval: "\e[1A\e[2K5 minutes" }
        """#.write(toFile: directory.file("conf.d/evil.yaml"), atomically: true, encoding: .utf8)
        let problems = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        #expect(problems.status == 78 && run.status == 78, "\(problems.stderr)")
        for output in [problems.stderr, run.stderr] {
            #expect(output.contains(#"\x1b[1A\x1b[2K5 minutes"#), "the refused value is shown escaped: \(output)")
        }
        for output in [summary.stdout, summary.stderr, problems.stdout, problems.stderr, run.stdout, run.stderr] {
            let raw = output.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || $0 == "\u{7F}" || $0 == "\u{202E}" }
            #expect(raw.isEmpty, "raw controls reached the terminal: \(raw.map(\.value))")
        }
    }

    static func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pinpath-check-\(UUID()).yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
