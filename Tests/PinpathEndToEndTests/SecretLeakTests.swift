import Foundation
import PinpathTestSupport
import Testing

/// Secrets planted in every place a configuration or a request can hold them — URL query, fragment and
/// userinfo, credential headers, `${ENV}` header values, a redirect's Location — must appear in no output:
/// not in events, not on stderr, not in check-config's summary or problems (issue 11, rule 8).
@Suite(
    "No secret reaches an event, a log line or the terminal", .serialized,
    .enabled(if: HTTPBinServer.isAvailable, Comment(rawValue: HTTPBinServer.unavailableReason)))
struct SecretLeakTests {
    /// Every planted secret contains this; no output may.
    static let marker = "SECRET"

    static func expectNoSecret(_ outputs: [(String, String)], sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, text) in outputs {
            let leaks = text.split(separator: "\n").filter { $0.contains(marker) }
            #expect(leaks.isEmpty, "\(name) leaks: \(leaks.joined(separator: "\n"))", sourceLocation: sourceLocation)
        }
    }

    @Test("pinpath run --once and check-config: query, fragment, headers, ${ENV} and a redirect's token stay out")
    func agentOutputs() throws {
        let httpbin = try HTTPBinServer()
        defer { httpbin.stop() }
        let silent = try SilentServer()
        defer { silent.stop() }
        let refused = try TLSServer.freePort()
        let directory = try TemporaryDirectory()
        let base = "http://127.0.0.1:\(httpbin.port)"
        // The redirect's target carries a token in its query; the hop then fails to connect, so its message
        // names the hop's URL.
        let target = "http://127.0.0.1:\(refused)/callback?code=SECRET-location"
        let encodedTarget = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        try """
        events: { output: events.jsonl, probes: all }
        endpoints:
          - name: redirected
            url: "\(base)/redirect-to?url=\(encodedTarget)&access_token=SECRET-query-1"
            headers:
              X-Api-Key: SECRET-api-key
              Authorization: "Bearer ${PINPATH_LEAK_TOKEN}"
              Cookie: session=SECRET-cookie
          - name: failing-status
            url: "\(base)/status/500?token=SECRET-query-2#access_token=SECRET-fragment"
            headers: { Proxy-Authorization: "Basic SECRET-proxy" }
          - name: timing-out
            url: "http://127.0.0.1:\(silent.port)/?token=SECRET-query-3"
            timeout: 1s

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let environment = ["/usr/bin/env", "PINPATH_LEAK_TOKEN=SECRET-env"]

        let run = try Shell.run(environment + [Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        #expect(run.status == 1, "every endpoint fails: \(run.stderr)")
        let events = directory.read("events.jsonl") ?? ""
        let categories = events.split(separator: "\n").compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["event"] as? String == "probe.completed"
            else { return nil }
            return "\(object["endpoint"] ?? "?")=\(object["error_category"] ?? "?")"
        }.sorted()
        #expect(categories == ["failing-status=unexpected_status", "redirected=connect_failed", "timing-out=timed_out"], "\(events)")

        let check = try Shell.run(environment + [Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        #expect(check.status == 0, "\(check.stderr)")
        let checkJSON = try Shell.run(environment + [Shell.pinpath, "check-config", "--json", "--config", directory.file("pinpath.yaml")])
        Self.expectNoSecret([
            ("events", events), ("run stdout", run.stdout), ("run stderr", run.stderr), ("check-config", check.stdout + check.stderr),
            ("check-config --json", checkJSON.stdout + checkJSON.stderr),
        ])

        // A configuration with problems quotes the values it refuses: without their secrets.
        try """
        endpoints:
          - { name: a, url: "ftp://host.test/?token=SECRET-bad-scheme" }
          - { name: b, url: "https://host.test/?token=SECRET-env-in-url-${X}" }
          - { name: c, url: "https://user:SECRET-password@host.test/" }
          - { name: d, url: "https:///?token=SECRET-no-host" }

        """.write(toFile: directory.file("bad.yaml"), atomically: true, encoding: .utf8)
        let bad = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("bad.yaml")])
        let badJSON = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", directory.file("bad.yaml")])
        #expect(bad.status == 78)
        #expect(bad.stderr.split(separator: "\n").count == 4, "each refused URL is still reported: \(bad.stderr)")
        Self.expectNoSecret([("check-config problems", bad.stderr + bad.stdout), ("check-config --json problems", badJSON.stdout)])
    }

    /// Issue 25, item 5: a servlet container's session id rides in a path parameter (`;jsessionid=…`), and
    /// services name their credential headers as they like (`X-Session-Id`, `X-Upstream-Token`, `Private-Key`):
    /// neither was redacted.
    @Test("Path parameters and credential-like header values: never in events, errors, check-config or --effective")
    func pathParametersAndCredentialLikeHeaders() throws {
        let httpbin = try HTTPBinServer()
        defer { httpbin.stop() }
        let refused = try TLSServer.freePort()
        let directory = try TemporaryDirectory()
        let base = "http://127.0.0.1:\(httpbin.port)"
        let hop = "http://127.0.0.1:\(refused)/callback;jsessionid=SECRET-hop-parameter"
        let credentialLike = [
            "X-Session-Id", "X-Upstream-Token", "Private-Key", "X-Client-Secret", "X-Password", "X-Passwd", "Set-Cookie",
            "X-Credentials",
        ]
        try """
        events: { output: events.jsonl, probes: all }
        endpoints:
          - name: session-in-path
            url: "\(base)/anything/app;jsessionid=SECRET-path-parameter/page;v=SECRET-second"
            expect: { status: 204 }
            headers:
        \(credentialLike.map { "      \($0): SECRET-\($0.lowercased())\n" }.joined())\
              X-Request-Source: visible-value
          - name: refused
            url: "http://127.0.0.1:\(refused)/app;jsessionid=SECRET-refused-parameter/x"
          - name: redirected
            url: "\(base)/redirect-to?url=\(hop.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)

        let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        #expect(run.status == 1, "every endpoint fails: \(run.stderr)")
        let events = directory.read("events.jsonl") ?? ""
        // The URLs are still shown, without their parameters; the failures name the hop and the refused URL.
        #expect(events.contains(#""url":"\#(base)/anything/app/page""#), "\(events)")
        #expect(events.contains("127.0.0.1:\(refused)/callback"), "the hop's failure names it: \(events)")
        #expect(events.contains("127.0.0.1:\(refused)/app/x"), "\(events)")

        let check = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        let effective = try Shell.run([Shell.pinpath, "check-config", "--effective", "--config", directory.file("pinpath.yaml")])
        let effectiveJSON = try Shell.run([
            Shell.pinpath, "check-config", "--effective", "--json", "--config", directory.file("pinpath.yaml"),
        ])
        #expect(check.status == 0 && effective.status == 0 && effectiveJSON.status == 0, "\(check.stderr)")
        for name in credentialLike {
            #expect(effective.stdout.contains(#""\#(name)":"[redacted]""#), "\(name): \(effective.stdout)")
        }
        #expect(effective.stdout.contains(#""X-Request-Source":"visible-value""#), "other values are shown: \(effective.stdout)")

        let request = try Shell.run([Shell.pinpath, "request", "http://127.0.0.1:\(refused)/app;jsessionid=SECRET-request/x"])
        let requestJSON = try Shell.run([Shell.pinpath, "request", "--json", "http://127.0.0.1:\(refused)/app;jsessionid=SECRET-request/x"])
        #expect(request.status == 3 && requestJSON.status == 3, "\(request.stderr)")
        #expect(request.stderr.contains("127.0.0.1:\(refused)/app/x"), "\(request.stderr)")

        try """
        endpoints:
          - { name: a, url: "ftp://host.test/app;jsessionid=SECRET-bad-scheme" }

        """.write(toFile: directory.file("bad.yaml"), atomically: true, encoding: .utf8)
        let bad = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("bad.yaml")])
        #expect(bad.status == 78)
        #expect(bad.stderr.contains("ftp://host.test/app"), "the refused URL is still named: \(bad.stderr)")
        Self.expectNoSecret([
            ("events", events), ("run stdout", run.stdout), ("run stderr", run.stderr), ("check-config", check.stdout + check.stderr),
            ("check-config --effective", effective.stdout + effective.stderr), ("check-config --effective --json", effectiveJSON.stdout),
            ("request", request.stdout + request.stderr), ("request --json", requestJSON.stdout + requestJSON.stderr),
            ("check-config problems", bad.stderr + bad.stdout),
        ])
    }

    @Test("pinpath request: userinfo, query, fragment and header values stay out of every error and of --json")
    func requestOutputs() throws {
        let httpbin = try HTTPBinServer()
        defer { httpbin.stop() }
        let silent = try SilentServer()
        defer { silent.stop() }
        let host = "127.0.0.1:\(httpbin.port)"
        let runs: [(String, [String], Int32)] = [
            (
                "status",
                [
                    "http://user:SECRET-password@\(host)/status/500?token=SECRET-query#SECRET-fragment",
                    "-H", "Authorization: Bearer SECRET-header",
                ], 5
            ),
            ("json summary", ["http://user:SECRET-password@\(host)/get?token=SECRET-query", "--json"], 0),
            ("timeout", ["http://127.0.0.1:\(silent.port)/?token=SECRET-query", "--timeout", "1"], 3),
            ("malformed URL", ["http://user:SECRET-password@exa mple.test/?token=SECRET-query"], 64),
            ("header injection", ["http://\(host)/get", "-H", "X-Api-Key: SECRET-api-key\r\nInjected: 1"], 64),
            ("too many redirects", ["http://\(host)/redirect/12?token=SECRET-query", "-H", "Cookie: SECRET-cookie"], 3),
        ]
        for (name, arguments, status) in runs {
            let result = try Shell.run([Shell.pinpath, "request"] + arguments)
            #expect(result.status == status, "\(name): \(result.stderr)")
            // The body of a successful request is the user's own data (httpbin echoes the request): not checked.
            let stdout = arguments.contains("--json") || result.status != 0 ? result.stdout : ""
            Self.expectNoSecret([("\(name) stdout", stdout), ("\(name) stderr", result.stderr)])
        }
    }

}

/// libcurl writes every TLS session's secrets to the file SSLKEYLOGFILE names: with them, a packet capture of
/// pinpath's traffic gives up its requests, credentials included.
/// `pinpath request -H` with no colon: the field is often a credential typed without it (`Authorization Bearer …`),
/// so the refusal names the option by position and at most a short name-like part, never the value. No server needed.
@Suite("A malformed -H is named without its value")
struct MalformedHeaderTests {
    @Test(
        "ATTACK: pinpath request: a -H without a colon is named by its position, never with its value",
        arguments: [
            ("Authorization Bearer SECRET-bearer", "Authorization"), ("X-Api-Key=SECRET-api-key", nil),
            ("Cookie; session=SECRET-cookie", nil), ("SECRET-bare-token-without-a-name", nil),
            ("\u{1B}[31mAuth\u{202E} SECRET-escaped", nil), ("Authorization Basic SECRET-user:SECRET-password", "Authorization"),
            ("X-Api-Key=SECRET-api:key", nil),
            // A bare token whose first name-like run ends at '/' or '=', or holds a digit: no part of it is shown.
            ("wJalrSECRETXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", nil), ("abSECRETc123 rest", nil), ("tokSECRETen=", nil),
        ] as [(String, String?)])
    func malformedHeader(field: String, shownName: String?) throws {
        let silent = try SilentServer()  // never reached: the request is refused before it is sent
        defer { silent.stop() }
        for json in [true, false] {
            let result = try Shell.run(
                [Shell.pinpath, "request"] + (json ? ["--json"] : [])
                    + ["-H", "Accept: text/plain", "-H", field, "http://127.0.0.1:\(silent.port)/"])
            #expect(result.status == 64, "\(result.stderr)")
            SecretLeakTests.expectNoSecret([("stdout", result.stdout), ("stderr", result.stderr)])
            #expect(result.stderr.contains("-H #2"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
            if let shownName { #expect(result.stderr.contains("-H #2 (\(shownName)…)"), "\(result.stderr)") }
            #expect(!result.stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" }, "\(result.stderr)")
            guard json else { continue }
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.count == 1, "one JSON object: \(result.stdout)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let error = try #require(object["error"] as? [String: Any], "\(object)")
            #expect((error["message"] as? String)?.contains("-H #2") == true, "\(error)")
        }
    }

    @Test("ATTACK: pinpath request: a --param without a name is named by its position, never with its value")
    func namelessParameter() throws {
        let silent = try SilentServer()
        defer { silent.stop() }
        let result = try Shell.run(
            [Shell.pinpath, "request", "--json", "--param", "a=1", "--param", "=SECRET-param", "http://127.0.0.1:\(silent.port)/"])
        #expect(result.status == 64, "\(result.stderr)")
        SecretLeakTests.expectNoSecret([("stdout", result.stdout), ("stderr", result.stderr)])
        #expect(result.stderr.contains("--param #2 is not k=v"), "\(result.stderr)")
    }

    @Test("ATTACK: a --form field typed without its name (a token) is named by position, never echoed")
    func namelessFormField() throws {
        let silent = try SilentServer()
        defer { silent.stop() }
        for field in ["SECRET-form", "=SECRET-form", "Bearer SECRET-form"] {
            let result = try Shell.run(
                [Shell.pinpath, "request", "--json", "--form", "a=1", "--form", field, "http://127.0.0.1:\(silent.port)/"])
            #expect(result.status == 64, "\(field): \(result.stderr)")
            SecretLeakTests.expectNoSecret([("stdout", result.stdout), ("stderr", result.stderr)])
            #expect(result.stderr.contains("--form #2 is not k=v"), "\(result.stderr)")
        }
    }
}

@Suite("No TLS key log")
struct KeyLogTests {
    @Test("SSLKEYLOGFILE set: a TLS request succeeds and no session secret is written to the key log")
    func noKeyLog() throws {
        let pki = TestPKI.shared
        let server = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { server.stop() }
        let scratch = try TemporaryDirectory("keylog")
        let keyLog = scratch.file("keylog")
        let result = try Shell.run([
            "/usr/bin/env", "SSLKEYLOGFILE=\(keyLog)", Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/",
            "--ca-file", pki.path("store"), "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""status_code":200"#), "\(result.stdout)")
        let written = (try? String(contentsOfFile: keyLog, encoding: .utf8)) ?? ""
        #expect(written.isEmpty, "the key log holds: \(written.prefix(300))")
    }
}
