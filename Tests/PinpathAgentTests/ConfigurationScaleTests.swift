import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// `defaults:`, `include:` and lists of `cert_expiry_warning` thresholds: what an operator with hundreds of
/// endpoints writes once.
@Suite("Configuration at scale: defaults, include, expiry thresholds")
struct ConfigurationScaleTests {
    static let day = 86_400

    @Test("defaults: fill every endpoint's unset keys; an endpoint's key replaces the default, headers merge by name")
    func defaultsApply() throws {
        let configuration = try loadConfiguration(
            """
            defaults:
              interval: 30s
              timeout: 5s
              headers: { X-Team: ops, X-Env: prod }
              expect: { status: 204, max_duration: 2s }
              cert_expiry_warning: [7d, 30d]
              send: PING
            endpoints:
              - name: a
                url: https://a.example/
              - name: b
                url: https://b.example/
                interval: 10s
                headers: { x-team: dev, X-Trace: "1" }
                expect: { body_contains: ok }
                cert_expiry_warning: 0s
              - name: c
                url: tls://c.example:443
              - name: d
                url: tcp://d.example:25
            """)
        let endpoints = configuration.endpoints
        try #require(endpoints.count == 4)
        let (a, b, c, d) = (endpoints[0], endpoints[1], endpoints[2], endpoints[3])
        #expect(a.interval == .seconds(30) && a.timeout == .seconds(5))
        #expect(a.headers.map(\.name) == ["X-Team", "X-Env"])
        #expect(a.expect.statusDescription == "204" && a.expect.maxDuration == .seconds(2))
        #expect(a.certExpiryWarnings == [.seconds(30 * Self.day), .seconds(7 * Self.day)])
        #expect(a.send == nil)  // send is tcp's: not applied to https
        #expect(b.interval == .seconds(10) && b.timeout == .seconds(5))
        #expect(b.headers.map(\.name) == ["X-Env", "x-team", "X-Trace"])
        #expect(b.headers.map(\.value.unredacted) == ["prod", "dev", "1"])
        #expect(b.expect.statusDescription == "200-299" && b.expect.bodyContains == "ok" && b.expect.maxDuration == nil)
        #expect(b.certExpiryWarnings.isEmpty)
        // A tls:// endpoint gets the defaults that mean something for it, and no error for the HTTP ones.
        #expect(c.interval == .seconds(30) && c.headers.isEmpty && c.expect.maxDuration == .seconds(2))
        #expect(d.send == "PING")
    }

    @Test("A problem in defaults: is reported once, at the default's line, however many endpoints inherit it")
    func defaultsProblems() {
        let problems = configurationProblems(
            """
            defaults:
              interval: 5 minutes
              intervall: 30s
              name: x
              timeout: 90s
            endpoints:
              - { name: a, url: "https://a.example/" }
              - { name: b, url: "https://b.example/" }
              - { name: c, url: "https://c.example/", timeout: 5s }
            """)
        #expect(
            problems == [
                #"test.yaml:2:13: defaults.interval: "5 minutes" is not a duration (use 300s or 5m)"#,
                #"test.yaml:3:3: defaults.intervall: unknown key "intervall"; did you mean "interval"?"#,
                "test.yaml:4:3: defaults.name: name identifies one endpoint; it cannot have a default",
                "test.yaml:5:12: defaults.timeout: 90s is longer than the interval (1m); a probe must end before the next one starts",
            ])
    }

    @Test("cert_expiry_warning: one duration or a list, each threshold once; 0s and [] turn warnings off")
    func thresholds() throws {
        func thresholds(_ value: String) throws -> [Duration] {
            try loadConfiguration("endpoints:\n  - { name: a, url: \"https://a.example/\", cert_expiry_warning: \(value) }\n")
                .endpoints[0].certExpiryWarnings
        }
        #expect(try thresholds("[30d, 14d, 7d, 1d]") == [30, 14, 7, 1].map { Duration.seconds($0 * Self.day) })
        #expect(try thresholds("[1d, 30d]") == [.seconds(30 * Self.day), .seconds(Self.day)])
        #expect(try thresholds("21d") == [.seconds(21 * Self.day)])
        #expect(try thresholds("0s").isEmpty)
        #expect(try thresholds("[]").isEmpty)
        let problems = configurationProblems(
            """
            endpoints:
              - name: a
                url: https://a.example/
                cert_expiry_warning: [7d, 30d, 7d, 0s, { d: 1 }]
            """)
        #expect(
            problems == [
                "test.yaml:4:36: endpoints[0].cert_expiry_warning[2]: 7d is already a threshold",
                "test.yaml:4:40: endpoints[0].cert_expiry_warning[3]: 0s is too short (it must be more than 0)",
                "test.yaml:4:44: endpoints[0].cert_expiry_warning[4]: expected a duration (like 30s), found a mapping",
            ])
    }

    /// Writes `files` (relative path → text) under a new directory.
    static func write(_ files: [String: String]) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        for (name, text) in files {
            let path = directory.file(name)
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test("include: appends each matched file's endpoints in sorted order, with the main file's defaults")
    func include() throws {
        let directory = try Self.write([
            "pinpath.yaml": """
            include: [conf.d/*.yaml, nothing-here/*.yaml]
            defaults:
              interval: 30s
            endpoints:
              - { name: main, url: "https://main.example/" }
            """,
            "conf.d/b.yaml": "endpoints:\n  - { name: b1, url: \"https://b1.example/\", interval: 10s }\n",
            "conf.d/a.yaml": "endpoints:\n  - name: a1\n    url: https://a1.example/\n  - name: a2\n    url: tls://a2.example:443\n",
            "conf.d/empty.yaml": "",
            "conf.d/skipped.yml": "not: read",
        ])
        let main = directory.file("pinpath.yaml")
        let configuration = try AgentConfiguration.load(path: main, environment: [:])
        #expect(configuration.endpoints.map(\.name) == ["main", "a1", "a2", "b1"])
        #expect(configuration.endpoints.map(\.interval) == [.seconds(30), .seconds(30), .seconds(30), .seconds(10)])
        #expect(
            configuration.warnings.map(\.description) == [
                #"\#(main):1:26: include[1]: "nothing-here/*.yaml" matches no file; no endpoints included from it"#
            ])
    }

    /// Round 2, finding 3: a scoped credential default reaches an included endpoint only when the policy its
    /// handshake is held to (named, inherited, or matched by host, combined) verifies the chain and checks the name.
    @Test("Scoped credential defaults reach an included endpoint only under a policy that authenticates its host")
    func scopedCredentialNeedsAuthenticatedServer() throws {
        let directory = try Self.write([
            "pinpath.yaml": """
            include: { files: conf.d/*.yaml, credentials_for: ["*.example"] }
            policies:
              lax: { mode: none, validates_domain_name: false }
              strict-hosts: { mode: none, hosts: [strict.example] }
            defaults:
              policy: lax
              headers: { Authorization: "Bearer ${TOKEN}", X-Team: ops }
            endpoints:
              - { name: main-lax, url: "https://main.example/" }
            """,
            "conf.d/a.yaml": """
            endpoints:
              - { name: inherited-lax, url: "https://a.example/" }
              - { name: own-null-policy, url: "https://b.example/", policy: ~ }
              - { name: combined-strict, url: "https://strict.example/" }
              - { name: tls-lax, url: "tls://c.example:443" }
            """,
        ])
        let configuration = try AgentConfiguration.load(path: directory.file("pinpath.yaml"), environment: ["TOKEN": "t"])
        let withheld = Dictionary(uniqueKeysWithValues: configuration.endpoints.map { ($0.name, $0.withheldDefaults) })
        let sent = Dictionary(uniqueKeysWithValues: configuration.endpoints.map { ($0.name, $0.headers.map(\.name)) })
        // The main file's author chose the lax policy for its own endpoint.
        #expect(sent["main-lax"] == ["Authorization", "X-Team"])
        #expect(withheld["inherited-lax"] == ["headers.Authorization"] && sent["inherited-lax"] == ["X-Team"])
        // No policy: the system store verifies the chain and the name. A lax policy combined with one matching the
        // host that checks the name checks it.
        #expect(withheld["own-null-policy"] == [] && sent["own-null-policy"] == ["Authorization", "X-Team"])
        #expect(withheld["combined-strict"] == [] && sent["combined-strict"] == ["Authorization", "X-Team"])
        #expect(withheld["tls-lax"] == [], "no header applies to tls://")
        let warnings = configuration.warnings.map(\.description)
        #expect(warnings.count == 1 && warnings[0].contains("endpoints[0]: the credential default headers.Authorization"), "\(warnings)")
        #expect(warnings.allSatisfy { $0.contains("its policy \"lax\" does not check the host name") }, "\(warnings)")

        // A policy that is not defined is refused at the endpoint; nothing warns about the credential too.
        try "endpoints:\n  - { name: undefined, url: \"https://d.example/\", policy: nope }\n".write(
            toFile: directory.file("conf.d/a.yaml"), atomically: true, encoding: .utf8)
        do {
            _ = try AgentConfiguration.load(path: directory.file("pinpath.yaml"), environment: ["TOKEN": "t"])
            Issue.record("an undefined policy loaded")
        } catch {
            #expect(error.problems.map(\.code) == [.undefinedReference], "\(error.problems)")
        }
    }

    @Test("Problems in included files name those files; a name used twice names both positions; no nested include")
    func includeProblems() throws {
        let directory = try Self.write([
            "pinpath.yaml": """
            include: conf.d/*.yaml
            defaults:
              timeout: 5 minutes
            endpoints:
              - name: api
                url: https://api.example/
            """,
            "conf.d/a.yaml": """
            endpoints:
              - name: api
                url: https://other.example/
              - name: extra
                url: https://extra.example/
                interval: 1 minute
            """,
            "conf.d/b.yaml": """
            include: more/*.yaml
            policies: {}
            endpoints: []
            """,
            "conf.d/c.yaml": "endpoints: [ {",
        ])
        let main = directory.file("pinpath.yaml")
        let (a, b, c) = (directory.file("conf.d/a.yaml"), directory.file("conf.d/b.yaml"), directory.file("conf.d/c.yaml"))
        do {
            _ = try AgentConfiguration.load(path: main, environment: [:])
            Issue.record("the configuration loaded")
        } catch {
            let problems = Set(error.problems.map(\.description))
            let expected: Set<String> = [
                #"\#(main):3:12: defaults.timeout: "5 minutes" is not a duration (use 300s or 5m)"#,
                #"\#(a):2:11: endpoints[0].name: another endpoint is already named "api" (at \#(main):5:11); names must be unique"#,
                #"\#(a):6:15: endpoints[1].interval: "1 minute" is not a duration (use 60s or 1m)"#,
                "\(b):1:1: include: an included file cannot include others (one level); move the pattern to \(main)",
                #"\#(b):2:1: policies: unknown key "policies"; known keys: endpoints"#,
            ]
            #expect(problems.subtracting(expected).count == 1, "\(problems.sorted())")  // c.yaml's syntax error
            #expect(expected.isSubset(of: problems), "\(expected.subtracting(problems).sorted())")
            #expect(error.problems.contains { $0.file == c && $0.code == .syntax }, "\(problems.sorted())")
        }
    }

    @Test("check-config --effective prints each endpoint's values after defaults, in text and JSON, secrets redacted")
    func effective() throws {
        let directory = try Self.write([
            "pinpath.yaml": """
            include: conf.d/*.yaml
            defaults:
              interval: 45s
              headers: { Authorization: "Bearer ${PINPATH_TEST_TOKEN}", X-Team: ops }
              cert_expiry_warning: [30d, 14d, 7d, 1d]
            endpoints:
              - { name: api, url: "https://api.example/health" }
            """,
            "conf.d/db.yaml": "endpoints:\n  - { name: db, url: \"tls://db.example:5432\", timeout: 3s }\n",
        ])
        let main = directory.file("pinpath.yaml")
        let secret = "s3cr3t-\(UUID().uuidString)"
        let environment = ["/usr/bin/env", "PINPATH_TEST_TOKEN=\(secret)", Shell.pinpath, "check-config", "--effective", "--config", main]
        let text = try Shell.run(environment)
        #expect(text.status == 0, "\(text.stderr)")
        for line in [
            "effective values:", "  api:", "    url: https://api.example/health", "    interval: 45s",
            #"    headers: {"Authorization":"[redacted] (from ${PINPATH_TEST_TOKEN})","X-Team":"ops"}"#,
            #"    cert_expiry_warning: ["30d","14d","7d","1d"]"#, "  db:", "    kind: tls", "    timeout: 3s",
        ] {
            #expect(text.stdout.split(separator: "\n").contains(Substring(line)), "\(line) in \(text.stdout)")
        }
        #expect(!text.stdout.contains(secret))
        let json = try Shell.run(environment + ["--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.contains(#""effective":{"name":"db","url":"tls://db.example:5432","kind":"tls","expect":{}"#), "\(json.stdout)")
        #expect(json.stdout.contains(#""interval":"45s""#) && !json.stdout.contains(secret))
        let plain = try Shell.run(Array(environment.filter { $0 != "--effective" }))
        #expect(!plain.stdout.contains("effective values:"))
    }
}

/// `pinpath run --once` with thresholds, defaults and an included file, against `openssl s_server` serving a
/// leaf that expires in 10 days.
@Suite("pinpath run --once: certificate expiry thresholds")
struct ExpiryThresholdRunTests {
    /// A root and a `localhost` leaf valid for 10 more days, made now (the dates must be relative to today).
    static let script = #"""
        set -euo pipefail
        cd "$1"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout root.key -out root.pem -days 3650 -subj "/CN=Expiry Test Root" \
          -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj /CN=localhost 2>/dev/null
        printf '%s\n' subjectAltName=DNS:localhost basicConstraints=CA:FALSE keyUsage=critical,digitalSignature,keyEncipherment \
          extendedKeyUsage=serverAuth subjectKeyIdentifier=hash authorityKeyIdentifier=keyid > leaf.ext
        openssl x509 -req -in leaf.csr -CA root.pem -CAkey root.key -CAcreateserial -days 10 -extfile leaf.ext -out leaf.pem 2>/dev/null
        """#

    @Test("Each endpoint warns once for the smallest threshold its leaf is within, with the threshold in the event")
    func thresholdEvents() throws {
        let directory = try TemporaryDirectory()
        _ = try Shell.check(["/bin/bash", "-c", Self.script, "pki", directory.path])
        let server = try TLSServer(
            certificate: directory.file("leaf.pem"), key: directory.file("leaf.key"), chain: [], in: directory.path)
        defer { server.stop() }
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try """
        events: { output: stdout, probes: all }
        policies:
          local: { mode: none, ca_file: root.pem, hosts: [localhost] }
        include: conf.d/*.yaml
        defaults:
          cert_expiry_warning: [30d, 14d, 7d, 1d]
          timeout: 5s
        endpoints:
          - { name: web, url: "https://localhost:\(server.port)/" }
          - { name: quiet, url: "https://localhost:\(server.port)/", cert_expiry_warning: [7d, 1d] }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try """
        endpoints:
          - { name: svc, url: "tls://localhost:\(server.port)", cert_expiry_warning: [60d, 20d] }

        """.write(toFile: directory.file("conf.d/svc.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let up = events.filter { $0["event"] as? String == "probe.completed" && $0["outcome"] as? String == "success" }
        #expect(Set(up.compactMap { $0["endpoint"] as? String }) == ["web", "quiet", "svc"], "\(result.stdout)\(result.stderr)")
        let expiring = events.filter { $0["event"] as? String == "tls.certificate_expiring" }
        let byEndpoint = Dictionary(grouping: expiring) { $0["endpoint"] as? String ?? "" }
        #expect(byEndpoint["web"]?.map { $0["threshold"] as? String } == ["14d"], "\(expiring)")
        #expect(byEndpoint["svc"]?.map { $0["threshold"] as? String } == ["20d"], "\(expiring)")
        #expect(byEndpoint["quiet"] == nil, "\(expiring)")
        #expect(expiring.allSatisfy { $0["depth"] as? Int == 0 && $0["days_left"] as? Int == 9 && $0["level"] as? String == "warning" })
    }
}
