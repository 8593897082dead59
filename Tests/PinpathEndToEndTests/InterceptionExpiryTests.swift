import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// An on-path attacker chooses the dates of the certificate they serve: an expired forgery must read as what it is,
/// an interception (`tls_invalid`, the trust failure first, the lapse after it), never as "your certificate expired,
/// renew it". Expiry is named first only for a chain that reaches an anchor of the policy for the host, as the
/// operator's own lapsed leaf does; and only such a chain's certificates are `tls.certificate_expired`'s, each once
/// however a server alternates its chains. Through the built `pinpath request`, `audit` and `run`, against real
/// `openssl s_server`s and a Python server that alternates chains per connection.
@Suite("An interception's dates are not an expiry", .serialized)
struct InterceptionExpiryTests {
    /// The operator's root ("Real CA") and its lapsed leaves, and the attacker's certificates: a self-signed expired
    /// leaf, one not yet valid, a leaf under a self-signed expired "Real CA R2", the real CA's expired certificate for
    /// another host, and chains of many expired self-signed certificates. `openssl ca` sets exact dates (the only
    /// OpenSSL 3.0 tool that does); `-selfsign` makes the self-signed ones.
    static let directory = GeneratedDirectory.make(
        "pinpath-interception-expiry", what: "the interception scenes' certificates",
        script: #"""
            set -euo pipefail
            cd "$1"
            mkdir -p newcerts; export CA=root; : > root.index; : > fake.index; : > self.index; echo 1000 > serial
            cat > ca.cnf <<'CNF'
            \#(OpenSSLCAFiles.commonConfiguration)
            [ leaf ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            subjectAltName = IP:127.0.0.1
            [ other_host ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            subjectAltName = DNS:other.example
            [ self_leaf ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectKeyIdentifier = hash
            subjectAltName = IP:127.0.0.1
            CNF
            key() { openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
            at() { date -u -d "$1" +%Y%m%d%H%M%SZ; }
            csr() { openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -out "$1.csr"; }
            # sign name issuer section start end
            sign() {
              CA=$2 openssl ca -batch -config ca.cnf -cert "$2.pem" -keyfile "$2.key" -in "$1.csr" -out "$1.pem" \
                -extensions "$3" -startdate "$4" -enddate "$5" -notext 2>/dev/null
            }
            # selfsign name section start end
            selfsign() {
              CA=self openssl ca -batch -config ca.cnf -selfsign -keyfile "$1.key" -in "$1.csr" -out "$1.pem" \
                -extensions "$2" -startdate "$3" -enddate "$4" -notext 2>/dev/null
            }
            key root; openssl req -x509 -new -config ca.cnf -key root.key -subj "/CN=Real CA" -days 3650 -out root.pem -extensions v3_ca
            key legit; csr legit legit.internal; sign legit root leaf "$(at '100 days ago')" "$(at '4 days ago')"
            key legit2; csr legit2 legit2.internal; sign legit2 root leaf "$(at '100 days ago')" "$(at '3 days ago')"
            key wronghost; csr wronghost other.example; sign wronghost root other_host "$(at '100 days ago')" "$(at '5 days ago')"
            key selfexpired; csr selfexpired attacker.expired; selfsign selfexpired self_leaf "$(at '400 days ago')" "$(at '5 days ago')"
            key notyet; csr notyet attacker.future; selfsign notyet self_leaf "$(at '5 days')" "$(at '50 days')"
            key fake; csr fake "Real CA R2"; selfsign fake v3_ca "$(at '400 days ago')" "$(at '3 days ago')"
            key underfake; csr underfake attacker.under-fake-root; sign underfake fake leaf "$(at '1 day ago')" "$(at '30 days')"
            # Two served chains of 20 expired self-signed certificates each, after the self-signed expired leaf and
            # after the leaf under the fake root, for the flood.
            key extra
            for i in $(seq 1 40); do
              csr extra "flood $i" && mv extra.csr "extra$i.csr" && cp extra.key "extra$i.key"
              selfsign "extra$i" v3_ca "$(at '400 days ago')" "$(at '2 days ago')"
            done
            cat selfexpired.pem $(for i in $(seq 1 20); do echo "extra$i.pem"; done) > flood-a.pem
            cat underfake.pem fake.pem $(for i in $(seq 21 40); do echo "extra$i.pem"; done) > flood-b.pem
            cat legit.pem root.pem > legit-chain.pem
            cat legit2.pem root.pem > legit2-chain.pem
            """#)

    static func file(_ name: String) -> String { "\(directory)/\(name)" }

    /// One server's certificates and what pinpath must say about them.
    struct Scene: CustomTestStringConvertible, Sendable {
        let name: String
        let certificate: String
        let chain: [String]
        /// `tls_expired` for the operator's lapsed leaf, `tls_invalid` for every forgery.
        let category: String
        /// audit's `result`.
        let auditResult: String
        /// What the message starts with, after the host.
        let first: String
        /// The lapse, said after the trust failure (nil: it is the first thing said).
        let lapseAfter: String?
        var testDescription: String { name }
    }

    static let legit = Scene(
        name: "legit", certificate: "legit", chain: [], category: "tls_expired", auditResult: "chain_invalid",
        first: "certificate has expired at depth 0 (CN=legit.internal)", lapseAfter: nil)
    static let forgeries = [
        Scene(
            name: "self-signed-expired", certificate: "selfexpired", chain: [], category: "tls_invalid",
            auditResult: "chain_invalid", first: "certificate verify failed at depth 0: self-signed certificate",
            lapseAfter: "; also: certificate has expired at depth 0 (CN=attacker.expired)"),
        Scene(
            name: "fake-expired-root", certificate: "underfake", chain: ["fake"], category: "tls_invalid",
            auditResult: "chain_invalid", first: "certificate verify failed at depth 1: self-signed certificate in certificate chain",
            lapseAfter: "; also: certificate has expired at depth 1 (CN=Real CA R2)"),
        Scene(
            name: "wrong-host-expired", certificate: "wronghost", chain: [], category: "tls_invalid",
            auditResult: "host_mismatch", first: "the certificate is not for this host",
            lapseAfter: "; also: certificate has expired at depth 0 (CN=other.example)"),
        Scene(
            name: "not-yet-valid", certificate: "notyet", chain: [], category: "tls_invalid",
            auditResult: "chain_invalid", first: "certificate verify failed at depth 0: self-signed certificate",
            lapseAfter: "; also: certificate is not yet valid at depth 0 (CN=attacker.future)"),
    ]

    static func server(_ scene: Scene, in directory: String) throws -> TLSServer {
        try TLSServer(
            certificate: file("\(scene.certificate).pem"), key: file("\(scene.certificate).key"),
            chain: scene.chain.map { file("\($0).pem") }, in: directory)
    }

    static func expectMessage(_ message: String, of scene: Scene, host: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(message.hasPrefix("\(host): \(scene.first)"), "\(scene.name): \(message)", sourceLocation: sourceLocation)
        if let lapseAfter = scene.lapseAfter {
            #expect(message.contains(lapseAfter), "\(scene.name): \(message)", sourceLocation: sourceLocation)
        }
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    static func pin(_ name: String) throws -> String {
        try Shell.check([
            "/bin/bash", "-c",
            "openssl x509 -in \"$1\" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            "pin", file("\(name).pem"),
        ]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(
        "ATTACK: pinpath request --json: an expired or not-yet-valid forgery is tls_invalid, the trust failure first and the lapse after; the operator's lapsed leaf stays tls_expired",
        arguments: [legit] + forgeries)
    func request(scene: Scene) throws {
        let scratch = try TemporaryDirectory()
        let server = try Self.server(scene, in: scratch.path)
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/"
        // Unpinned, and pinned to the operator's leaf key: the pins change nothing about what is said first.
        for pins in [[], ["--pin", "sha256/\(try Self.pin("legit"))", "--pin", "sha256/\(try Self.pin("legit2"))"]] {
            let result = try Shell.run(
                [Shell.pinpath, "request", "--json", "--timeout", "5s", "--ca-file", Self.file("root.pem")] + pins + [url])
            #expect(result.status == 2, "\(scene.name): \(result.stderr)")
            let error = try #require(try Self.json(result.stdout)["error"] as? [String: Any], "\(result.stdout)")
            #expect(error["category"] as? String == scene.category, "\(scene.name) \(pins): \(error)")
            Self.expectMessage(error["message"] as? String ?? "", of: scene, host: "GET \(url): 127.0.0.1")
        }
    }

    @Test(
        "ATTACK: pinpath audit --json: the real CA's expired certificate for another host is host_mismatch, every forgery says its trust failure first",
        arguments: [legit] + forgeries)
    func audit(scene: Scene) throws {
        let scratch = try TemporaryDirectory()
        let server = try Self.server(scene, in: scratch.path)
        defer { server.stop() }
        let result = try Shell.run([
            Shell.pinpath, "audit", "--json", "--timeout", "5s", "--ca-file", Self.file("root.pem"), "127.0.0.1:\(server.port)",
        ])
        #expect(result.status == 2, "\(scene.name): \(result.stderr)")
        let object = try Self.json(result.stdout)
        #expect(object["result"] as? String == scene.auditResult, "\(scene.name): \(object)")
        let error = try #require(object["error"] as? [String: Any], "\(object)")
        Self.expectMessage(error["message"] as? String ?? "", of: scene, host: "127.0.0.1")
    }

    @Test("SecurityPolicy.evaluate: in certificate mode a pinned certificate is the anchor: its lapse is named first")
    func pinnedCertificateAnchors() throws {
        let leaf = try Certificate.certificates(contentsOf: Self.file("legit.pem"))
        let policy = try SecurityPolicy(mode: .certificate, pinnedCertificates: leaf)
        let evaluation = try policy.evaluate(servedChain: leaf, host: "127.0.0.1", trustStore: try TrustStore(certificates: []))
        let failure = try #require(evaluation.failure)
        #expect(failure.isOutsideValidity, "\(failure)")
        #expect(evaluation.chainIsAnchoredForHost)
        // The attacker's self-signed expired leaf against the same pinned certificate: no anchor, no expiry first.
        let forged = try policy.evaluate(
            servedChain: try Certificate.certificates(contentsOf: Self.file("selfexpired.pem")), host: "127.0.0.1",
            trustStore: try TrustStore(certificates: []))
        #expect(forged.failure?.isOutsideValidity == false, "\(String(describing: forged.failure))")
        #expect(!forged.chainIsAnchoredForHost)
    }

    @Test(
        """
        ATTACK: pinpath run: forgeries are tls_invalid in probe.completed and pinpath_probe_failure_info and write no \
        tls.certificate_expired; the operator's lapsed leaf is tls_expired with one error-level tls.certificate_expired
        """)
    func agent() async throws {
        let scene = try TemporaryDirectory()
        let scenes = [Self.legit] + Self.forgeries
        var servers: [TLSServer] = []
        defer { for server in servers { server.stop() } }
        for item in scenes { servers.append(try Self.server(item, in: scene.path)) }
        let listen = "127.0.0.1:\(try TLSServer.freePort())"
        let endpoints = zip(scenes, servers).map { item, server in
            "  - { name: \(item.name), url: \"https://127.0.0.1:\(server.port)/\", policy: internal, interval: 2s, timeout: 2s, failure_threshold: 1 }"
        }
        try """
        events: { output: \(scene.file("events.jsonl")), probes: all }
        policies:
          internal: { mode: none, ca_file: \(Self.file("root.pem")) }
        endpoints:
        \(endpoints.joined(separator: "\n"))
        metrics:
          listen: "\(listen)"

        """.write(toFile: scene.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", scene.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.kill(agent) }

        var metrics = ""
        try await MetricsEndpointTests.wait("every scene's category in /metrics") {
            metrics = try MetricsEndpointTests.fetch(listen, "/metrics")?.body ?? ""
            return scenes.allSatisfy {
                MetricsEndpointTests.value(#"pinpath_probe_failure_info{endpoint="\#($0.name)",category="\#($0.category)"}"#, in: metrics)
                    == 1
            }
        }
        // A second round of probes, for events a repeat would bring.
        try await Task.sleep(for: .seconds(3))
        let events = scene.lines("events.jsonl").compactMap { try? Self.json(String($0)) }
        for (item, port) in zip(scenes, servers.map(\.port)) {
            let probes = events.filter { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == item.name }
            #expect(probes.count >= 2, "\(item.name): \(probes)")
            for probe in probes {
                #expect(probe["error_category"] as? String == item.category, "\(item.name): \(probe)")
                Self.expectMessage(probe["message"] as? String ?? "", of: item, host: "GET https://127.0.0.1:\(port)/: 127.0.0.1")
            }
        }
        let expired = events.filter { $0["event"] as? String == "tls.certificate_expired" }
        #expect(expired.map { $0["endpoint"] as? String } == ["legit"], "\(expired)")
        #expect(expired.first?["level"] as? String == "error")
        #expect(expired.first?["subject"] as? String == "CN=legit.internal")
    }

    /// A Python server that serves, every `$3` connections in turn, the next of its chains (`CHAIN KEY` pairs), writes
    /// its port to `$1` and a line per connection to `$2`. A step of 2 serves a probe refused for an expiry and the
    /// handshake that proves its key (``ReplayedExpiryTests``) the same chain.
    static let alternatingServer = #"""
        import itertools, os, socket, ssl, sys
        port_file, log, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
        pairs = sys.argv[4:]
        contexts = []
        for chain, key in zip(pairs[0::2], pairs[1::2]):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(chain, key)
            contexts.append(context)
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(listener.getsockname()[1]))
        os.rename(port_file + ".tmp", port_file)
        for n in itertools.count():
            connection, _ = listener.accept()
            with open(log, "a") as f:
                f.write("connection %d\n" % n)
            try:
                contexts[(n // step) % len(contexts)].wrap_socket(connection, server_side=True).close()
            except Exception:
                connection.close()
        """#

    @Test(
        """
        ATTACK: pinpath run: servers alternating two chains on every probe — two lapsed leaves of the operator's CA, and \
        two forged chains of 21 and 22 expired certificates — write one tls.certificate_expired per lapsed leaf, and none \
        for the forgeries
        """)
    func alternatingChains() async throws {
        let scene = try TemporaryDirectory()
        try Self.alternatingServer.write(toFile: scene.file("alternate.py"), atomically: true, encoding: .utf8)
        var servers: [(name: String, pid: pid_t, port: UInt16)] = []
        defer { for server in servers { Shell.kill(server.pid) } }
        // The operator's chains change every two connections: each refused probe and the second handshake proving
        // the expired leaf's key see the same one (a leaf changing in between is unproven, not an expiry).
        for (name, step, pairs) in [
            ("operator", 2, [("legit-chain.pem", "legit.key"), ("legit2-chain.pem", "legit2.key")]),
            ("forged", 1, [("flood-a.pem", "selfexpired.key"), ("flood-b.pem", "underfake.key")]),
        ] {
            let started = try Shell.spawnServer(
                ["/usr/bin/python3", scene.file("alternate.py"), scene.file("\(name).port"), scene.file("\(name).log"), "\(step)"]
                    + pairs.flatMap { [Self.file($0.0), Self.file($0.1)] },
                portFile: scene.file("\(name).port"), what: "the alternating server \(name)")
            servers.append((name, started.pid, started.port))
        }
        let endpoints = servers.map {
            "  - { name: \($0.name), url: \"https://127.0.0.1:\($0.port)/\", policy: internal, interval: 1s, timeout: 1s, failure_threshold: 1 }"
        }
        try """
        events: { output: \(scene.file("events.jsonl")), probes: all }
        policies:
          internal: { mode: none, ca_file: \(Self.file("root.pem")) }
        endpoints:
        \(endpoints.joined(separator: "\n"))

        """.write(toFile: scene.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", scene.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.kill(agent) }

        // Six probes each: every chain served three times (two connections a probe for the operator's).
        try await MetricsEndpointTests.wait("six probes of each alternating server", timeout: .seconds(30)) {
            scene.lines("operator.log").count >= 12 && scene.lines("forged.log").count >= 6
        }
        try await Task.sleep(for: .milliseconds(500))  // the last probe's events
        let events = scene.lines("events.jsonl").compactMap { try? Self.json(String($0)) }
        let probes = events.filter { $0["event"] as? String == "probe.completed" }
        #expect(probes.filter { $0["endpoint"] as? String == "operator" }.count >= 5, "\(probes)")
        #expect(probes.filter { $0["endpoint"] as? String == "forged" }.count >= 5, "\(probes)")
        let expired = events.filter { $0["event"] as? String == "tls.certificate_expired" }
        #expect(
            expired.map { "\($0["endpoint"] ?? "?") \($0["subject"] ?? "?")" }.sorted()
                == ["operator CN=legit.internal", "operator CN=legit2.internal"], "\(expired.count) events: \(expired.prefix(5))")
    }
}
