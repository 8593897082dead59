import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// The probe kinds in the agent: each configuration key refused where it does not apply (at its line), and
/// `pinpath run --once` probing real servers on loopback (`openssl s_server`, the Python mail and banner
/// servers), with `probe.completed` carrying the fields that apply to the kind.
@Suite("Probe kinds in the agent", .serialized)
struct ProbeKindsAgentTests {
    let pki = TestPKI.shared
    let clients = ClientCertificatePKI.shared

    static func endpoint(_ url: String, _ extra: String = "") -> String {
        "endpoints:\n  - name: e\n    url: \"\(url)\"\n" + extra
    }

    // MARK: Configuration

    @Test(
        "A key that does not apply to the URL's kind is refused at its line, naming the key and why",
        arguments: [
            ("smtp://mail.example:587", "", "endpoints[0].starttls: starttls is missing", "set starttls: true"),
            ("smtp://mail.example:587", "    starttls: false\n", "endpoints[0].starttls:", "never probes these protocols in plaintext"),
            ("tls://db.example:5432", "    starttls: true\n", "endpoints[0].starttls:", "starttls applies to smtp://"),
            ("tls://db.example", "", "endpoints[0].url:", "needs one (tls://host:port)"),
            ("tcp://db.example", "", "endpoints[0].url:", "needs one (tcp://host:port)"),
            ("tls://db.example:5432/path", "", "endpoints[0].url:", "has a path"),
            ("gopher://db.example:70", "", "endpoints[0].url:", "is not a URL pinpath probes"),
            ("ldap://ldap.example", "    starttls: true\n", "endpoints[0].url:", "ldap:// (LDAP with StartTLS) is refused"),
            ("ldap://ldap.example:389", "", "endpoints[0].url:", "goes on in plaintext, so the server could not be verified; use ldaps://"),
            ("tls://db.example:5432", "    send: hello\n", "endpoints[0].send:", "send applies to tcp:// URLs only"),
            ("tls://db.example:5432", "    method: POST\n", "endpoints[0].method:", "applies to http:// and https:// URLs only"),
            ("tls://db.example:5432", "    expect: { status: 200 }\n", "endpoints[0].expect.status:", "applies to http:// and https://"),
            ("tls://db.example:5432", "    expect: { banner: x }\n", "endpoints[0].expect.banner:", "banner applies to the kinds"),
            ("https://api.example/", "    expect: { banner: x }\n", "endpoints[0].expect.banner:", "this URL is https://"),
            (
                "https://api.example/", "    servername: other.example\n", "endpoints[0].servername:",
                "an https URL's host is the name checked"
            ),
            ("tcp://db.example:5432", "    servername: other.example\n", "endpoints[0].servername:", "has no TLS"),
            ("tls://db.example:5432", "    servername: \"bad name\"\n", "endpoints[0].servername:", "is not a host name"),
            ("tcp://db.example:5432", "    client_certificate: /x.pem\n", "endpoints[0].client_certificate:", "has none"),
            ("https://api.example/", "    client_key: /x.key\n", "endpoints[0].client_key:", "without client_certificate"),
            ("tls://db.example:5432", "    body: hello\n", "endpoints[0].body:", "applies to http:// and https://"),
            ("https://api.example/", "    body: a\n    body_file: /x\n", "endpoints[0].body:", "not both"),
            ("https://api.example/", "    body_file: /nonexistent/body.json\n", "endpoints[0].body_file:", "cannot read"),
            (
                "https://api.example/", "    expect: { headers: { X-A: \"/[/\" } }\n", "endpoints[0].expect.headers.X-A:",
                "not a valid regular expression"
            ),
            ("https://api.example/", "    expect: { max_duration: soon }\n", "endpoints[0].expect.max_duration:", "not a duration"),
        ])
    func keyRefusedForKind(_ url: String, _ extra: String, _ place: String, _ reason: String) {
        let problems = configurationProblems(Self.endpoint(url, extra))
        #expect(problems.count == 1, "\(problems)")
        #expect(problems.first?.contains(place) == true && problems.first?.contains(reason) == true, "\(problems)")
    }

    @Test("Each kind loads with its keys: the kind, the server name, send and the banner")
    func kindsLoad() throws {
        let configuration = try loadConfiguration(
            """
            endpoints:
              - { name: tls, url: "tls://db.example:5432", servername: DB.Internal.Example }
              - { name: tcp, url: "tcp://cache.example:6379", send: "PING\\r\\n", expect: { banner: "+PONG" } }
              - { name: smtp, url: "smtp://mail.example:587", starttls: true, expect: { banner: ESMTP } }
              - { name: imaps, url: "imaps://mail.example" }
              - { name: web, url: "https://api.example/health" }
            """)
        let endpoints = configuration.endpoints
        #expect(endpoints.map(\.kind) == [.tls, .tcp, .smtp, .imaps, .https])
        #expect(endpoints[0].serverName == "db.internal.example")
        #expect(endpoints[1].send == "PING\r\n" && endpoints[1].expect.banner == "+PONG")
        #expect(endpoints[2].expect.banner == "ESMTP")
    }

    @Test("A client certificate is checked at load: an unusable one is a problem at the key's line, the password never shown")
    func clientCertificateChecked() throws {
        let password = ClientCertificatePKI.password
        func problems(_ keys: String, environment: [String: String] = ["KEY_PASSWORD": password]) -> [String] {
            configurationProblems(Self.endpoint("https://api.example/", keys), environment: environment)
        }
        let certificate = "    client_certificate: \(clients.path("client"))\n"
        #expect(problems(certificate + "    client_key: \(clients.path("client", "key"))\n").isEmpty)
        #expect(
            problems(
                certificate + "    client_key: \(clients.path("client-encrypted", "key"))\n    client_key_password: ${KEY_PASSWORD}\n"
            ).isEmpty)

        let encrypted = problems(certificate + "    client_key: \(clients.path("client-encrypted", "key"))\n")
        #expect(
            encrypted.count == 1 && encrypted[0].contains("endpoints[0].client_key:") && encrypted[0].contains("encrypted"), "\(encrypted)")
        let wrong = problems(
            certificate + "    client_key: \(clients.path("client-encrypted", "key"))\n    client_key_password: ${KEY_PASSWORD}\n",
            environment: ["KEY_PASSWORD": "not the password"])
        #expect(wrong.count == 1 && wrong[0].contains("cannot be decrypted"), "\(wrong)")
        #expect(!wrong.joined().contains("not the password"))
        let mismatch = problems(certificate + "    client_key: \(clients.path("stranger", "key"))\n")
        #expect(mismatch.count == 1 && mismatch[0].contains("does not belong to the certificate"), "\(mismatch)")
        let unreadable = problems("    client_certificate: /nonexistent/client.pem\n")
        #expect(unreadable.count == 1 && unreadable[0].contains("endpoints[0].client_certificate:"), "\(unreadable)")
        let unset = problems(certificate + "    client_key_password: ${UNSET_PASSWORD}\n", environment: [:])
        #expect(unset.contains { $0.contains("UNSET_PASSWORD is not set") }, "\(unset)")
    }

    @Test(
        "Attack: a client certificate or key path that is a FIFO a writer holds open is a problem at its line at once, not a hang",
        arguments: ["client_certificate", "client_key"])
    func clientCertificateFIFORefused(key: String) throws {
        let directory = try TemporaryDirectory()
        let fifo = directory.file("client.pem")
        try #require(mkfifo(fifo, 0o600) == 0)
        // Opened for reading and writing, a FIFO opens at once and keeps a writer: a read of it waits for ever.
        let writer = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0)
        let keys =
            key == "client_certificate"
            ? "    client_certificate: \(fifo)\n    client_key: \(clients.path("client", "key"))\n"
            : "    client_certificate: \(clients.path("client"))\n    client_key: \(fifo)\n"
        let yaml = Self.endpoint("tls://db.example:5432", keys)
        // On a thread of its own, bounded, so that a read that blocks fails the test instead of hanging it.
        let answered = DispatchSemaphore(value: 0)
        let found = LockedProblems()
        DispatchQueue.global().async {
            found.set(configurationProblems(yaml))
            answered.signal()
        }
        let inTime = answered.wait(timeout: .now() + .seconds(10 * TestTime.scale)) == .success
        close(writer)  // ends a read that blocked
        if !inTime { answered.wait() }
        #expect(inTime, "loading the configuration waited on the FIFO")
        let problems = found.get()
        #expect(
            problems.count == 1 && problems[0].contains("endpoints[0].\(key):")
                && problems[0].contains("\(fifo): is a FIFO (named pipe), not a regular file"), "\(problems)")
    }

    /// The problems a loading thread found, for the test's thread.
    final class LockedProblems: @unchecked Sendable {
        // @unchecked: `problems` is read and written only with `lock` held.
        private let lock = NSLock()
        private var problems: [String] = []
        func set(_ found: [String]) { lock.withLock { problems = found } }
        func get() -> [String] { lock.withLock { problems } }
    }

    @Test("The password renders redacted wherever the configuration is printed")
    func passwordRedacted() throws {
        let configuration = try loadConfiguration(
            Self.endpoint(
                "https://api.example/",
                "    client_certificate: \(clients.path("client"))\n    client_key: \(clients.path("client-encrypted", "key"))\n"
                    + "    client_key_password: ${KEY_PASSWORD}\n"),
            environment: ["KEY_PASSWORD": ClientCertificatePKI.password])
        let endpoint = try #require(configuration.endpoints.first)
        #expect(endpoint.clientCertificate?.password?.unredacted == ClientCertificatePKI.password)
        for rendering in ["\(endpoint)", String(reflecting: endpoint), "\(configuration)"] {
            #expect(!rendering.contains(ClientCertificatePKI.password))
        }
    }

    @Test("Attack: check-config and run refuse ldap:// (StartTLS) with the reason, exit 78, before any connection")
    func ldapRefusedAtStart() throws {
        let slapd = try SlapdServer(certificate: try mailChain(), directory: pki.directory)
        defer { slapd.stop() }
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try "endpoints:\n  - { name: directory, url: \"ldap://127.0.0.1:\(slapd.ldapPort)\", starttls: true }\n".write(
            toFile: file, atomically: true, encoding: .utf8)
        let reason = """
            \(file):2:29: endpoints[0].url: "ldap://127.0.0.1:\(slapd.ldapPort)": ldap:// (LDAP with StartTLS) is refused: libcurl \
            (7.87 to 8.5, Debian 12's 7.88.1 among them) never starts TLS after the server accepts StartTLS and goes on in plaintext, \
            so the server could not be verified; use ldaps:// (LDAP over TLS, port 636) instead
            """
        let check = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(check.status == 78)
        #expect(check.stderr == "pinpath: error: \(reason)\n", "\(check.stderr)")
        let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", file])
        #expect(run.status == 78)
        #expect(run.stderr.contains(reason), "\(run.stderr)")
        usleep(200_000)
        #expect(slapd.connections(to: slapd.ldapPort) == 0, "\(slapd.logText)")
    }

    // MARK: Probes end to end

    /// Runs `pinpath run --once` (every probe reported) with the test store as the system's, returning the
    /// exit status, the events and everything printed.
    func runOnce(_ endpoints: String, policies: String = "", environment: [String] = []) throws -> (
        status: Int32, events: [[String: Any]], output: String
    ) {
        let directory = try TemporaryDirectory()
        try "events: { probes: all }\n\(policies)endpoints:\n\(endpoints)".write(
            toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run(
            ["/usr/bin/env", "SSL_CERT_FILE=\(pki.path("store"))"] + environment + [
                Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml"),
            ])
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        return (result.status, events, result.stdout + result.stderr)
    }

    func probes(_ events: [[String: Any]]) -> [String: [String: Any]] {
        Dictionary(
            events.filter { $0["event"] as? String == "probe.completed" }.map { ($0["endpoint"] as? String ?? "", $0) },
            uniquingKeysWith: { first, _ in first })
    }

    func mailChain() throws -> (chain: String, key: String) {
        let file = "\(pki.directory)/ip-chain-for-agent-mail.pem"
        try [pki.path("ip"), pki.path("inter")].map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: file, atomically: true, encoding: .utf8)
        return (file, pki.path("ip", "key"))
    }

    @Test("tls://, tcp:// and SMTP STARTTLS probes: outcomes, no status_code, the kind's phases, banners and pins")
    func probesOfEachKind() throws {
        let tls = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { tls.stop() }
        let banner = try MailServer(.tcp, .greet, directory: pki.directory)
        defer { banner.stop() }
        let smtp = try MailServer(.smtp, .starttls, certificate: try mailChain(), directory: pki.directory)
        defer { smtp.stop() }
        let pins = try pki.chain(["inter", "root"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let wrongPins = try pki.chain(["otherinter", "otherroot"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let (status, events, output) = try runOnce(
            """
              - { name: tls-good, url: "tls://127.0.0.1:\(tls.port)", policy: pinned }
              - { name: tls-wrong-pin, url: "tls://127.0.0.1:\(tls.port)", policy: wrong }
              - { name: tcp-banner, url: "tcp://127.0.0.1:\(banner.port)", expect: { banner: SSH-2.0 } }
              - { name: tcp-other-banner, url: "tcp://127.0.0.1:\(banner.port)", expect: { banner: "220 " } }
              - { name: smtp, url: "smtp://127.0.0.1:\(smtp.port)", starttls: true, policy: pinned, expect: { banner: ESMTP } }
              - { name: smtp-other-banner, url: "smtp://127.0.0.1:\(smtp.port)", starttls: true, expect: { banner: Postfix } }

            """,
            policies: """
                policies:
                  pinned: { mode: public_key, pins: [\(pins)] }
                  wrong: { mode: public_key, pins: [\(wrongPins)] }

                """)
        #expect(status == 1, "\(output)")
        let probes = probes(events)
        #expect(probes.count == 6, "\(output)")
        for name in ["tls-good", "tcp-banner", "smtp"] {
            #expect(probes[name]?["outcome"] as? String == "success", "\(name): \(probes[name] ?? [:])")
        }
        #expect(probes["tls-wrong-pin"]?["error_category"] as? String == "policy_rejected")
        #expect(probes["tcp-other-banner"]?["error_category"] as? String == "unexpected_banner")
        #expect(probes["smtp-other-banner"]?["error_category"] as? String == "unexpected_banner")
        #expect(probes.values.allSatisfy { $0["status_code"] == nil }, "status_code is HTTP's")
        #expect((probes["tls-good"]?["phases_ms"] as? [String: Any]).map { Set($0.keys) } == ["resolve", "connect", "tls"])
        #expect((probes["tcp-banner"]?["phases_ms"] as? [String: Any]).map { Set($0.keys) } == ["resolve", "connect"])
        #expect((probes["smtp"]?["tls_version"] as? String)?.hasPrefix("TLSv1.") == true)
        let pinFailures = events.filter { $0["event"] as? String == "pin.failure" }
        #expect(pinFailures.map { $0["endpoint"] as? String } == ["tls-wrong-pin"], "\(pinFailures)")
    }

    @Test(
        """
        ldaps:// against slapd and STARTTLS under attack: right pins up, a wrong pin a pin.failure; a server that accepts \
        STARTTLS and goes on in plaintext is tls_failed, saying so; a genuine one is up
        """
    )
    func ldapsAndHostileUpgrade() throws {
        let slapd = try SlapdServer(certificate: try mailChain(), directory: pki.directory)
        defer { slapd.stop() }
        let hostile = try MailServer(.smtp, .upgradeThenPlaintext, directory: pki.directory)
        defer { hostile.stop() }
        let genuine = try MailServer(.smtp, .starttls, certificate: try mailChain(), directory: pki.directory)
        defer { genuine.stop() }
        let pins = try pki.chain(["inter", "root"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let wrongPins = try pki.chain(["otherinter", "otherroot"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let (status, events, output) = try runOnce(
            """
              - { name: ldaps, url: "ldaps://127.0.0.1:\(slapd.ldapsPort)", policy: pinned }
              - { name: ldaps-wrong-pin, url: "ldaps://127.0.0.1:\(slapd.ldapsPort)", policy: wrong }
              - { name: smtp-hostile, url: "smtp://127.0.0.1:\(hostile.port)", starttls: true, policy: pinned }
              - { name: smtp, url: "smtp://127.0.0.1:\(genuine.port)", starttls: true, policy: pinned }

            """,
            policies: """
                policies:
                  pinned: { mode: public_key, pins: [\(pins)] }
                  wrong: { mode: public_key, pins: [\(wrongPins)] }

                """)
        #expect(status == 1, "\(output)")
        let probes = probes(events)
        for name in ["ldaps", "smtp"] {
            #expect(probes[name]?["outcome"] as? String == "success", "\(name): \(probes[name] ?? [:])")
        }
        #expect(probes["ldaps-wrong-pin"]?["error_category"] as? String == "policy_rejected", "\(probes["ldaps-wrong-pin"] ?? [:])")
        let pinFailures = events.filter { $0["event"] as? String == "pin.failure" }
        #expect(pinFailures.map { $0["endpoint"] as? String } == ["ldaps-wrong-pin"], "\(pinFailures)")
        let hostileProbe = probes["smtp-hostile"] ?? [:]
        #expect(hostileProbe["error_category"] as? String == "tls_failed", "\(hostileProbe)")
        let message = hostileProbe["message"] as? String ?? ""
        #expect(
            message.contains(
                "the server accepted STARTTLS, then no TLS handshake completed, so pinpath's verifier never checked a certificate"),
            "\(message)")
        #expect(
            message.contains(
                "in plaintext only the greeting, EHLO and STARTTLS were exchanged, and after STARTTLS nothing was sent but the start of a TLS handshake"
            ), "\(message)")
        #expect(
            hostile.plaintextCommands.map { $0.split(separator: " ").first.map(String.init) } == ["EHLO", "STARTTLS"],
            "\(hostile.transcript)")
    }

    @Test("HTTP body, body_file, expect.headers and expect.max_duration: sent, checked, and a header mismatch fails")
    func httpAdditions() throws {
        let server = try RecordingServer(
            certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: pki.directory)
        defer { server.stop() }
        let bodyFile = "\(pki.directory)/probe-body-\(UUID().uuidString).json"
        try #"{"probe":true}"#.write(toFile: bodyFile, atomically: true, encoding: .utf8)
        let (status, events, output) = try runOnce(
            """
              - name: post
                url: "\(server.origin)/post"
                method: POST
                body: ping
                expect: { headers: { content-type: text/plain, Content-Length: "/^[0-9]+$/" }, max_duration: 30s }
              - name: put-file
                url: "\(server.origin)/put"
                method: PUT
                body_file: \(bodyFile)
              - name: header-missing
                url: "\(server.origin)/get"
                expect: { headers: { X-Missing: "x" } }
              - name: header-mismatch
                url: "\(server.origin)/get"
                expect: { headers: { Content-Type: "/^application/json/" } }

            """)
        #expect(status == 1, "\(output)")
        let probes = probes(events)
        #expect(probes["post"]?["outcome"] as? String == "success", "\(probes["post"] ?? [:])")
        #expect(probes["put-file"]?["outcome"] as? String == "success", "\(probes["put-file"] ?? [:])")
        #expect(probes["header-missing"]?["error_category"] as? String == "unexpected_header")
        #expect((probes["header-missing"]?["message"] as? String)?.contains("no X-Missing header") == true)
        #expect(probes["header-mismatch"]?["error_category"] as? String == "unexpected_header")
        let received = server.requests
        #expect(received.contains { $0.method == "POST" && $0.path == "/post" && $0.body == "ping" }, "\(received.map(\.body))")
        #expect(received.contains { $0.method == "PUT" && $0.body == #"{"probe":true}"# }, "\(received.map(\.body))")
    }

    @Test(
        "mTLS: a server that requires a client certificate accepts the configured one (encrypted key, ${ENV} password) and refuses a probe without"
    )
    func mutualTLS() throws {
        let server = try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
            extraArguments: ["-Verify", "1", "-verify_return_error", "-CAfile", clients.path("client-ca")])
        defer { server.stop() }
        let (status, events, output) = try runOnce(
            """
              - name: with-cert
                url: "https://127.0.0.1:\(server.port)/"
                client_certificate: \(clients.path("client"))
                client_key: \(clients.path("client-encrypted", "key"))
                client_key_password: ${CLIENT_KEY_PASSWORD}
              - name: without-cert
                url: "https://127.0.0.1:\(server.port)/"

            """, environment: ["CLIENT_KEY_PASSWORD=\(ClientCertificatePKI.password)"])
        #expect(status == 1, "\(output)")
        let probes = probes(events)
        #expect(probes["with-cert"]?["outcome"] as? String == "success", "\(probes["with-cert"] ?? [:])")
        #expect(probes["with-cert"]?["status_code"] as? Int == 200)
        #expect(probes["without-cert"]?["error_category"] as? String == "tls_failed", "\(probes["without-cert"] ?? [:])")
        #expect(!output.contains(ClientCertificatePKI.password), "the password reached the output")
    }
}
