import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// `GET /api/v1/status` on the built `pinpath run`, probing real servers on loopback: the document's content for
/// each kind of endpoint, checked against docs/status-api.schema.json with Python's `jsonschema`; hostile names
/// from an included file and a hostile certificate carried as data; no secret in the body; the headers, HEAD and
/// `metrics.basic_auth`; 1,000 endpoints.
@Suite("The status document (/api/v1/status)", .serialized)
struct StatusAPITests {
    typealias Answer = MetricsEndpointTests.Answer

    /// Every planted secret contains this; the document may not.
    static let secret = "SECRET"
    /// The texts a page would run if it took data for markup.
    static let imagePayload = "<img src=x onerror=alert(1)>"
    static let scriptPayload = #""><script>alert(1)</script>"#

    /// A Python that can import `jsonschema` (scripts/packages.sh `install_test_python`), or nil.
    static let schemaPython: String? = {
        let candidate = ProcessInfo.processInfo.environment["PINPATH_TEST_PYTHON"] ?? "python3"
        return (try? Shell.run([candidate, "-c", "import jsonschema"]).status) == 0 ? candidate : nil
    }()

    /// Validates `document` against docs/status-api.schema.json; returns jsonschema's complaints ("" when valid).
    static func schemaErrors(_ document: String) throws -> String {
        let python = try #require(schemaPython, "jsonschema is needed: source scripts/packages.sh && install_test_python")
        let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/status-api.schema.json").path
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(json.load(sys.stdin)), key=lambda e: list(e.path))
            for error in errors[:10]: print(list(error.path), error.message[:300])
            sys.exit(1 if errors else 0)
            """
        let result = try Shell.run([python, "-c", script, schema], input: document)
        return result.status == 0 ? "" : result.stdout + result.stderr
    }

    /// The document as an object.
    static func parse(_ body: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], "not a JSON object: \(body.prefix(300))")
    }

    static func endpoints(_ document: [String: Any]) -> [[String: Any]] { document["endpoints"] as? [[String: Any]] ?? [] }

    static func endpoint(_ name: String, in document: [String: Any]) -> [String: Any]? {
        endpoints(document).first { $0["name"] as? String == name }
    }

    /// An agent on the listener given, with `yaml`'s endpoints, started with a secret in its environment.
    final class Agent {
        let directory: TemporaryDirectory
        let listen: String
        var pid: pid_t = 0

        init(directory: TemporaryDirectory, yaml: String, metrics: String = "") throws {
            self.directory = directory
            listen = "127.0.0.1:\(try TLSServer.freePort())"
            try """
            events: { output: \(directory.file("events.jsonl")) }
            reachability: { targets: [127.0.0.1] }
            \(yaml)
            metrics:
              listen: "\(listen)"
            \(metrics)

            """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        }

        func start() async throws {
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            pid = try Shell.spawn(
                [
                    "/usr/bin/env", "STATUS_TOKEN=\(StatusAPITests.secret)-env", Shell.pinpath, "run", "--config",
                    directory.file("pinpath.yaml"),
                ],
                stdout: devNull)
            try await MetricsEndpointTests.wait("the listener") { try MetricsEndpointTests.fetch(listen, "/healthz")?.status == 200 }
        }

        func fetch(_ path: String = "/api/v1/status", _ options: [String] = []) throws -> Answer {
            try #require(try MetricsEndpointTests.fetch(listen, path, options), "no answer to \(path)")
        }

        func document() throws -> [String: Any] { try StatusAPITests.parse(try fetch().body) }

        deinit { if pid > 0 { Shell.kill(pid) } }
    }

    /// A leaf for 127.0.0.1 whose subject and SANs carry markup, under a root of its own.
    static func hostileCertificate() throws -> (certificate: String, key: String, root: String) {
        let pki = NamesPKI.shared
        let root = "status-hostile-root-\(UUID().uuidString.prefix(8))"
        let leaf = "status-hostile-leaf-\(UUID().uuidString.prefix(8))"
        try pki.root(root)
        // openssl's -subj takes `/` as a separator: the one in </script> is escaped for it.
        try pki.leaf(
            leaf, issuer: root, subject: #"/CN=\"><script>alert(1)<\/script>/O=<img src=x onerror=alert(1)>"#,
            extensions: [#"subjectAltName=IP:127.0.0.1,DNS:<img src=x onerror=alert(1)>,URI:"><script>alert(1)</script>"#])
        return (pki.path(leaf), pki.path(leaf, "key"), pki.path(root))
    }

    /// A TLS server on loopback with the test PKI's valid leaf for localhost and its intermediate.
    static func localhostServer(in directory: TemporaryDirectory) throws -> TLSServer {
        let localhost = LocalhostPKI.shared
        return try TLSServer(
            certificate: localhost.path("valid"), key: localhost.path("valid", "key"), chain: [TestPKI.shared.path("inter")],
            in: directory.path, port: nil)
    }

    @Test(
        "A good pinned https server, a wrong pin, a closed port, a tls:// one and a hostile certificate (refused): each endpoint's state, probe, certificate, policy and pins; events; the schema; no secret, no markup",
        .enabled(if: schemaPython != nil, "needs jsonschema (source scripts/packages.sh && install_test_python)"))
    func documentOfRealServers() async throws {
        let directory = try TemporaryDirectory()
        let server = try Self.localhostServer(in: directory)
        defer { server.stop() }
        let hostile = try Self.hostileCertificate()
        let hostileServer = try TLSServer(certificate: hostile.certificate, key: hostile.key, chain: [], in: directory.path, port: nil)
        defer { hostileServer.stop() }
        let closed = try TLSServer.freePort()
        let interPin = try TestPKI.shared.certificate("inter").spkiPin.description
        let rootPin = try TestPKI.shared.certificate("root").spkiPin.description
        let otherPin = try TestPKI.shared.certificate("otherinter").spkiPin.description
        let leafPin = try #require(try Certificate.certificates(contentsOf: LocalhostPKI.shared.path("valid")).first).spkiPin.description
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try """
        endpoints:
          - { name: "\(Self.imagePayload)", url: "https://localhost:\(server.port)/image", policy: pinned, interval: 1s, timeout: 900ms }
          - { name: '\(Self.scriptPayload)', url: "http://127.0.0.1:\(closed)/script", interval: 1s, timeout: 900ms }

        """.write(toFile: directory.file("conf.d/hostile.yaml"), atomically: true, encoding: .utf8)
        let agent = try Agent(
            directory: directory,
            yaml: """
                include: \(directory.file("conf.d/*.yaml"))
                policies:
                  pinned: { mode: public_key, pins: ["\(interPin)", "\(rootPin)"], ca_file: \(TestPKI.shared.path("store")) }
                  wrong: { mode: public_key, pins: ["\(otherPin)"], require_backup_pin: false, ca_file: \(TestPKI.shared.path("store")) }
                  hostile-ca: { mode: none, ca_file: \(hostile.root) }
                endpoints:
                  - name: good
                    url: "https://localhost:\(server.port)/health?token=\(Self.secret)-query"
                    policy: pinned
                    interval: 1s
                    timeout: 900ms
                    headers: { X-Api-Key: \(Self.secret)-header, Authorization: "Bearer ${STATUS_TOKEN}" }
                  - { name: wrong-pin, url: "https://localhost:\(server.port)/", policy: wrong, interval: 1s, timeout: 900ms, failure_threshold: 1 }
                  - { name: closed, url: "https://127.0.0.1:\(closed)/", interval: 1s, timeout: 900ms, failure_threshold: 1 }
                  - { name: tls, url: "tls://localhost:\(server.port)", policy: pinned, interval: 1s, timeout: 900ms }
                  - { name: hostile-cert, url: "https://127.0.0.1:\(hostileServer.port)/", policy: hostile-ca, interval: 1s, timeout: 900ms }
                """)
        try await agent.start()
        var seen = ""
        defer { if !seen.isEmpty { print("the last states seen: \(seen)") } }
        try await MetricsEndpointTests.wait("every endpoint decided, the pin failure seen") {
            let document = try agent.document()
            let states = Dictionary(
                uniqueKeysWithValues: Self.endpoints(document).map { ($0["name"] as? String ?? "", $0["state"] as? String ?? "") })
            seen = Self.endpoints(document).map {
                "\($0["name"] ?? "?")=\($0["state"] ?? "?") \(($0["last_probe"] as? [String: Any])?["message"] ?? "-")"
            }
            .joined(separator: "\n")
            return states["good"] == "up" && states["wrong-pin"] == "down" && states["closed"] == "down" && states["tls"] == "up"
                && states["hostile-cert"] == "down" && states[Self.imagePayload] == "up" && states[Self.scriptPayload] == "down"
                // Down because its certificate was refused, not because a loaded machine timed a probe out.
                && !(Self.endpoint("hostile-cert", in: document)?["certificate"] is NSNull)
                && (document["events"] as? [[String: Any]] ?? []).contains { $0["event"] as? String == "pin.failure" }
        }
        seen = ""
        let answer = try agent.fetch()
        #expect(answer.status == 200)
        #expect(answer.headers["content-type"] == "application/json")
        #expect(answer.headers["cache-control"] == "no-store")
        #expect(answer.headers["x-content-type-options"] == "nosniff")
        let body = answer.body
        #expect(try Self.schemaErrors(body) == "")
        // Data, never markup: no `<` anywhere, the payloads as JSON escapes; no secret anywhere.
        #expect(!body.contains("<") && !body.contains(">"))
        #expect(body.contains(#"\u003cimg src=x onerror=alert(1)\u003e"#))
        #expect(!body.contains(Self.secret), "\(body)")
        let document = try Self.parse(body)
        #expect(document["version"] as? Int == 1)
        let agentInfo = try #require(document["agent"] as? [String: Any])
        #expect(agentInfo["config"] as? String == directory.file("pinpath.yaml"))
        #expect(agentInfo["refresh_ms"] as? Int == 5000)
        #expect(agentInfo["last_reload"] is NSNull)
        #expect((document["path"] as? [String: Any])?["status"] as? String == "reachable")

        // Configuration order: the main file's endpoints, then the included file's.
        #expect(
            Self.endpoints(document).map { $0["name"] as? String ?? "" } == [
                "good", "wrong-pin", "closed", "tls", "hostile-cert", Self.imagePayload, Self.scriptPayload,
            ])

        let good = try #require(Self.endpoint("good", in: document))
        #expect(good["url"] as? String == "https://localhost:\(server.port)/health")
        #expect(good["kind"] as? String == "https")
        #expect(good["interval_ms"] as? Int == 1000)
        #expect(good["cause"] as? String == "probe_succeeded")
        #expect(good["since"] is String)
        let probe = try #require(good["last_probe"] as? [String: Any])
        #expect(probe["outcome"] as? String == "success")
        #expect(probe["status_code"] as? Int == 200)
        #expect(probe["tls_version"] as? String != nil)
        #expect((probe["phases_ms"] as? [String: Any])?["tls"] is Double)
        #expect(!(good["durations"] as? [[String: Any]] ?? []).isEmpty)
        let certificate = try #require(good["certificate"] as? [String: Any])
        #expect(certificate["subject"] as? String == "CN=localhost")
        #expect(certificate["not_after"] as? String == "2045-01-01T00:00:00Z")
        // days_left = floor((not_after - now) / 1 day), now being the document's generated_at.
        let generated = try #require(ISO8601DateFormatter.withFractionalSeconds.date(from: document["generated_at"] as? String ?? ""))
        let notAfter = try #require(ISO8601DateFormatter().date(from: "2045-01-01T00:00:00Z"))
        #expect(certificate["days_left"] as? Int == Int((notAfter.timeIntervalSince(generated) / 86_400).rounded(.down)))
        let chain = try #require(certificate["chain"] as? [[String: Any]])
        #expect(chain.map { $0["spki_pin"] as? String ?? "" } == [leafPin, interPin, rootPin])
        #expect(chain.map { $0["depth"] as? Int ?? -1 } == [0, 1, 2])
        let policy = try #require(good["policy"] as? [String: Any])
        #expect(policy["names"] as? [String] == ["pinned"])
        #expect(policy["mode"] as? String == "public_key")
        #expect(policy["pins"] as? [String] == [interPin, rootPin].sorted())
        #expect(policy["enforced"] as? Bool == true)
        #expect(policy["pins_matched"] as? Bool == true)
        #expect(policy["profile"] is String)
        #expect(good["last_pin_failure"] is NSNull)

        let wrong = try #require(Self.endpoint("wrong-pin", in: document))
        #expect((wrong["policy"] as? [String: Any])?["pins_matched"] as? Bool == false)
        #expect((wrong["last_probe"] as? [String: Any])?["error_category"] as? String == "policy_rejected")
        let failure = try #require(wrong["last_pin_failure"] as? [String: Any])
        #expect(failure["enforced"] as? Bool == true)
        #expect((failure["message"] as? String ?? "").contains(otherPin))
        #expect(failure["served_pins"] as? [String] == [leafPin, interPin])
        // The served chain, since it did not pass.
        #expect((wrong["certificate"] as? [String: Any])?["subject"] as? String == "CN=localhost")

        let closedEndpoint = try #require(Self.endpoint("closed", in: document))
        #expect((closedEndpoint["last_probe"] as? [String: Any])?["error_category"] as? String == "connect_failed")
        #expect(closedEndpoint["certificate"] is NSNull)
        #expect(closedEndpoint["policy"] is NSNull)

        let tls = try #require(Self.endpoint("tls", in: document))
        #expect(tls["kind"] as? String == "tls")
        #expect((tls["certificate"] as? [String: Any])?["subject"] as? String == "CN=localhost")
        #expect((tls["last_probe"] as? [String: Any])?["status_code"] is NSNull)

        // The hostile certificate's names, literally, as strings: its DNS SAN is refused (rfc5280.san_dns_syntax), so
        // the document shows the served leaf, and the refusal's message quotes the names too.
        let hostileEndpoint = try #require(Self.endpoint("hostile-cert", in: document))
        let hostileMessage = (hostileEndpoint["last_probe"] as? [String: Any])?["message"] as? String ?? ""
        #expect(hostileMessage.contains(Self.imagePayload), "\(hostileMessage)")
        let hostileCertificate = try #require(hostileEndpoint["certificate"] as? [String: Any])
        // The subject as RFC 2253 writes it (its own backslashes before `<`, `>` and `"`), unchanged: no HTML entity.
        let subject = hostileCertificate["subject"] as? String ?? ""
        #expect(subject == (try Certificate.certificates(contentsOf: hostile.certificate).first?.subject ?? "-"))
        #expect(subject.contains("<img src=x onerror=alert(1)") && subject.contains("<script"), "\(subject)")
        #expect(!subject.contains("&lt;"))
        // openssl's configuration ate the URI's leading quote.
        let sans = hostileCertificate["sans"] as? [String] ?? []
        #expect(
            sans.contains { $0.contains(Self.imagePayload) } && sans.contains { $0.contains("><script>alert(1)</script>") }, "\(sans)")

        // The events of interest: each state change, the pin failure; summaries are one line of plain text.
        let events = try #require(document["events"] as? [[String: Any]])
        let changes = events.filter { $0["event"] as? String == "endpoint.state_changed" }.compactMap { $0["endpoint"] as? String }
        #expect(Set(changes).isSuperset(of: ["good", "wrong-pin", "closed", "tls", "hostile-cert", Self.imagePayload, Self.scriptPayload]))
        let pinFailure = try #require(events.first { $0["event"] as? String == "pin.failure" })
        #expect(pinFailure["endpoint"] as? String == "wrong-pin")
        #expect(pinFailure["summary"] as? String == "pin mismatch on localhost:\(server.port) (enforced)")
        let wrongDown = events.first { $0["event"] as? String == "endpoint.state_changed" && $0["endpoint"] as? String == "wrong-pin" }
        #expect(wrongDown?["summary"] as? String == "unknown → down (policy_rejected)")
        #expect(wrongDown?["level"] as? String == "error")
        #expect(events.allSatisfy { !($0["summary"] as? String ?? "\n").contains("\n") })
    }

    @Test("HEAD, the headers, a reload's outcome, and metrics.basic_auth: 401 without credentials, the document with them")
    func headersReloadAndBasicAuth() async throws {
        let hash = try MetricsListenerAccessTests.bcrypt("right password")
        let directory = try TemporaryDirectory()
        let closed = try TLSServer.freePort()
        let agent = try Agent(
            directory: directory, yaml: "endpoints:\n  - { name: a, url: \"http://127.0.0.1:\(closed)/\", interval: 7s }",
            metrics: "  basic_auth: { users: { viewer: \"\(hash)\" } }")
        try await agent.start()
        let refused = try agent.fetch()
        #expect(refused.status == 401)
        #expect(!refused.body.contains("endpoints"))
        #expect(try agent.fetch("/api/v1/status", ["-u", "viewer:wrong"]).status == 401)
        let credentials = ["-u", "viewer:right password"]
        let head = try agent.fetch("/api/v1/status", credentials + ["-I"])
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.headers["content-type"] == "application/json" && head.headers["cache-control"] == "no-store")
        #expect(head.headers["x-content-type-options"] == "nosniff")
        #expect(Int(head.headers["content-length"] ?? "") ?? 0 > 0)
        let before = try Self.parse(try agent.fetch("/api/v1/status", credentials).body)
        #expect((before["agent"] as? [String: Any])?["refresh_ms"] as? Int == 7000)
        #expect(Self.endpoints(before).map { $0["name"] as? String } == ["a"])

        // A rejected reload, then an applied one: last_reload says which, the endpoints follow.
        let yaml = try String(contentsOfFile: directory.file("pinpath.yaml"), encoding: .utf8)
        try (yaml + "bogus_key: 1\n").write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        kill(agent.pid, SIGHUP)
        try await MetricsEndpointTests.wait("the rejected reload") {
            let document = try Self.parse(try agent.fetch("/api/v1/status", credentials).body)
            return ((document["agent"] as? [String: Any])?["last_reload"] as? [String: Any])?["outcome"] as? String == "rejected"
        }
        let rejected = try Self.parse(try agent.fetch("/api/v1/status", credentials).body)
        let reload = try #require((rejected["agent"] as? [String: Any])?["last_reload"] as? [String: Any])
        #expect((reload["errors"] as? [String] ?? []).contains { $0.contains("bogus_key") }, "\(reload)")
        try yaml.replacingOccurrences(of: "interval: 7s }", with: "interval: 7s }\n  - { name: b, url: \"http://127.0.0.1:\(closed)/b\" }")
            .write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        kill(agent.pid, SIGHUP)
        try await MetricsEndpointTests.wait("the applied reload") {
            let document = try Self.parse(try agent.fetch("/api/v1/status", credentials).body)
            return ((document["agent"] as? [String: Any])?["last_reload"] as? [String: Any])?["outcome"] as? String == "reloaded"
        }
        let reloaded = try agent.fetch("/api/v1/status", credentials).body
        #expect(Self.endpoints(try Self.parse(reloaded)).map { $0["name"] as? String } == ["a", "b"])
        let events = try Self.parse(reloaded)["events"] as? [[String: Any]] ?? []
        #expect(events.contains { $0["event"] as? String == "config.rejected" && $0["level"] as? String == "error" })
        #expect(events.contains { $0["event"] as? String == "config.reloaded" })
        if Self.schemaPython != nil { #expect(try Self.schemaErrors(reloaded) == "") }
    }

    @Test(
        "1,000 endpoints on one local server: the document lists every one, in order, and validates",
        .enabled(if: schemaPython != nil, "needs jsonschema (source scripts/packages.sh && install_test_python)"))
    func thousandEndpoints() async throws {
        let directory = try TemporaryDirectory()
        let server = try Self.localhostServer(in: directory)
        defer { server.stop() }
        let interPin = try TestPKI.shared.certificate("inter").spkiPin.description
        let rootPin = try TestPKI.shared.certificate("root").spkiPin.description
        var yaml = """
            policies:
              pinned: { mode: public_key, pins: ["\(interPin)", "\(rootPin)"], ca_file: \(TestPKI.shared.path("store")) }
            endpoints:

            """
        let names = (1...1000).map { "e\($0)" }
        for name in names {
            yaml += "  - { name: \(name), url: \"https://localhost:\(server.port)/\(name)\", policy: pinned, interval: 60s, timeout: 5s }\n"
        }
        let agent = try Agent(directory: directory, yaml: yaml)
        try await agent.start()
        // Some probes done: the document carries results, certificates and events, not only configuration.
        try await MetricsEndpointTests.wait("a few results", timeout: .seconds(60)) {
            Self.endpoints(try agent.document()).filter { $0["state"] as? String == "up" }.count >= 50
        }
        let body = try agent.fetch().body
        #expect(try Self.schemaErrors(body) == "")
        let document = try Self.parse(body)
        #expect(Self.endpoints(document).map { $0["name"] as? String ?? "" } == names)
        #expect((document["events"] as? [Any])?.count == 50)
        let up = try #require(Self.endpoints(document).first { $0["state"] as? String == "up" })
        #expect(((up["certificate"] as? [String: Any])?["chain"] as? [Any])?.count == 3)
        print("1,000 endpoints: \(body.utf8.count) bytes, \(Self.endpoints(document).filter { $0["state"] as? String == "up" }.count) up")
    }

    /// A leaf for 127.0.0.1 made to inflate the document: 8 `OU=` of 64 `<` and 100 `DNS:` SANs of 240 `<` each,
    /// every `<` written `\u003c` (six bytes) in the JSON. The attacker's review of issue 27 served it with two
    /// copies as the chain: 500 such endpoints made a 53 MB document.
    static func inflatedCertificate() throws -> (certificate: String, key: String, root: String) {
        let pki = NamesPKI.shared
        let root = "status-inflated-root-\(UUID().uuidString.prefix(8))"
        let leaf = "status-inflated-leaf-\(UUID().uuidString.prefix(8))"
        try pki.root(root)
        let markup = { (count: Int) in String(repeating: "<", count: count) }
        try pki.leaf(
            leaf, issuer: root, subject: "/CN=inflated" + String(repeating: "/OU=" + markup(64), count: 8),
            extensions: ["subjectAltName=IP:127.0.0.1," + Array(repeating: "DNS:" + markup(240), count: 100).joined(separator: ",")])
        return (pki.path(leaf), pki.path(leaf, "key"), pki.path(root))
    }

    /// The raw bytes of the endpoint named `name` in a document's body (the names used hold nothing to escape).
    static func endpointBytes(_ name: String, in body: String, before next: String?) throws -> Int {
        let start = try #require(body.range(of: #"{"name":"\#(name)""#), "no endpoint \(name)")
        let end = try next.map { try #require(body.range(of: #",{"name":"\#($0)""#), "no endpoint \($0)").lowerBound }
        let stop = try end ?? #require(body.range(of: #"],"events":"#)).lowerBound
        return body.utf8[start.lowerBound..<stop].count
    }

    @Test(
        "A certificate of 8 × 64 `<` in its subject and 100 × 240 `<` in its SANs, and a chain of 12: the endpoint's share of the document stays under 40 KB, the lists cut with a count",
        .enabled(if: schemaPython != nil, "needs jsonschema (source scripts/packages.sh && install_test_python)"))
    func serverTextBudget() async throws {
        let directory = try TemporaryDirectory()
        let inflated = try Self.inflatedCertificate()
        let inflatedServer = try TLSServer(
            certificate: inflated.certificate, key: inflated.key, chain: [inflated.certificate, inflated.certificate], in: directory.path,
            port: nil)
        defer { inflatedServer.stop() }
        let small = try Self.hostileCertificate()
        let longChainServer = try TLSServer(
            certificate: small.certificate, key: small.key, chain: Array(repeating: small.certificate, count: 11), in: directory.path,
            port: nil)
        defer { longChainServer.stop() }
        let agent = try Agent(
            directory: directory,
            yaml: """
                policies:
                  inflated-ca: { mode: none, ca_file: \(inflated.root) }
                  small-ca: { mode: none, ca_file: \(small.root) }
                endpoints:
                  - { name: inflated, url: "https://127.0.0.1:\(inflatedServer.port)/", policy: inflated-ca, interval: 1s, timeout: 900ms }
                  - { name: long-chain, url: "https://127.0.0.1:\(longChainServer.port)/", policy: small-ca, interval: 1s, timeout: 900ms }
                """)
        try await agent.start()
        try await MetricsEndpointTests.wait("both certificates shown") {
            let endpoints = Self.endpoints(try agent.document())
            return endpoints.count == 2 && endpoints.allSatisfy { !($0["certificate"] is NSNull) && !($0["last_probe"] is NSNull) }
        }
        let body = try agent.fetch().body
        #expect(try Self.schemaErrors(body) == "")
        let document = try Self.parse(body)

        // Before the budget: about 150 KB for this one endpoint.
        let share = try Self.endpointBytes("inflated", in: body, before: "long-chain")
        #expect(share < 40_000, "the inflated endpoint costs \(share) bytes of the document")
        print("the inflated endpoint's share of the document: \(share) bytes")
        let endpoint = try #require(Self.endpoint("inflated", in: document))
        let certificate = try #require(endpoint["certificate"] as? [String: Any])
        let sans = try #require(certificate["sans"] as? [String])
        let omitted = try #require(certificate["sans_omitted"] as? Int)
        #expect(sans.count + omitted == 101 && omitted > 0, "\(sans.count) shown, \(omitted) omitted")
        // Whole SANs only, each at most its 256 scalars and the ellipsis.
        #expect(sans.first == "IP:127.0.0.1")
        #expect(sans.dropFirst().allSatisfy { $0 == "DNS:" + String(repeating: "<", count: 240) }, "\(sans)")
        #expect((certificate["subject"] as? String)?.hasSuffix("…") == true)
        #expect((certificate["chain"] as? [[String: Any]])?.count == 3)
        #expect(certificate["chain_omitted"] as? Int == 0)
        let message = (endpoint["last_probe"] as? [String: Any])?["message"] as? String ?? ""
        #expect(message.unicodeScalars.count <= 769 && !message.isEmpty, "\(message.unicodeScalars.count) scalars")

        // Ten certificates of the twelve served, and the count of the rest.
        let longChain = try #require(Self.endpoint("long-chain", in: document)?["certificate"] as? [String: Any])
        #expect((longChain["chain"] as? [[String: Any]])?.count == 10)
        #expect(longChain["chain_omitted"] as? Int == 2)
        #expect(longChain["sans_omitted"] as? Int == 0)
    }
}

extension ISO8601DateFormatter {
    /// `2026-11-27T18:00:00.123456Z`, as the document writes its times.
    static var withFractionalSeconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
