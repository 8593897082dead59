import Foundation
import PinpathTestSupport
import Testing

/// Certificates are public (CT logs): an on-path attacker with no key replays the service's old expired
/// certificate. The verifier refuses it at the Certificate message, before the server proves possession of the
/// key, so `tls_expired` ("renew it") is said only after a second handshake to the same address completes with
/// the same leaf; a replay, another leaf or a failed second handshake is `tls_invalid`, the expiry said after why it
/// is unproven. Through the built `pinpath request` and `pinpath run`, against a raw-socket Python server with no
/// key (``ReplayTLSServer``) and real `openssl s_server`s and Python TLS servers holding the keys.
@Suite("A replayed expired certificate is not an expiry", .serialized)
struct ReplayedExpiryTests {
    /// The operator's PKI of ``InterceptionExpiryTests``: `legit.pem` and `legit2.pem` are lapsed leaves (EC keys,
    /// for `127.0.0.1`) of `root.pem`.
    static func file(_ name: String) -> String { InterceptionExpiryTests.file(name) }

    static let unproven = "did not prove it holds the key of the expired certificate it sent: a replay?"
    static let lapse = "certificate has expired at depth 0 (CN=legit.internal)"

    static func request(_ url: String, _ extra: [String] = []) throws -> (status: Int32, error: [String: Any]) {
        let result = try Shell.run(
            [Shell.pinpath, "request", "--json", "--timeout", "5s", "--ca-file", Self.file("root.pem")] + extra + [url])
        let error = try #require(try InterceptionExpiryTests.json(result.stdout)["error"] as? [String: Any], "\(result.stdout)")
        return (result.status, error)
    }

    @Test(
        "ATTACK: pinpath request --json: the operator's expired certificate replayed without its key is tls_invalid, the missing proof named and the expiry said"
    )
    func replayedRequest() throws {
        let scratch = try TemporaryDirectory()
        // Held open: the second handshake waits for a proof that never comes, until the request's timeout.
        let server = try ReplayTLSServer(chain: [Self.file("legit.pem")], holds: true, in: scratch.path)
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/"
        let (status, error) = try Self.request(url, ["--timeout", "2s"])
        #expect(status == 2)
        #expect(error["category"] as? String == "tls_invalid", "\(error)")
        let message = error["message"] as? String ?? ""
        #expect(message.hasPrefix("GET \(url): 127.0.0.1: the server \(Self.unproven)"), "\(message)")
        #expect(message.contains("a second handshake with 127.0.0.1:\(server.port) did not complete"), "\(message)")
        #expect(message.contains("within the timeout"), "\(message)")
        #expect(message.contains(Self.lapse), "\(message)")
        // The refused handshake and the one that would have proven the key: nothing else.
        #expect(server.connections == 2)
    }

    @Test("ATTACK: pinpath request --json: the replay in TLS 1.3 (Certificate sent, no CertificateVerify) is tls_invalid too")
    func replayedInTLS13() throws {
        let scratch = try TemporaryDirectory()
        let server = try ReplayTLSServer(chain: [Self.file("legit.pem")], tls13: true, in: scratch.path)
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/"
        let (_, error) = try Self.request(url)
        #expect(error["category"] as? String == "tls_invalid", "\(error)")
        let message = error["message"] as? String ?? ""
        #expect(message.hasPrefix("GET \(url): 127.0.0.1: the server \(Self.unproven)"), "\(message)")
        #expect(message.contains(Self.lapse), "\(message)")
        #expect(server.connections == 2)
    }

    /// The attacker's reproduction: a CA and its leaf for `svc.test` that lapsed on 2024-04-01 (`openssl ca` sets
    /// exact dates), an EC key for the replay server's suite.
    static let service = GeneratedDirectory.make(
        "pinpath-replayed-expiry", what: "the svc.test certificates",
        script: #"""
            set -euo pipefail
            cd "$1"
            mkdir -p newcerts; export CA=ca; : > ca.index; echo 1000 > serial
            cat > ca.cnf <<'CNF'
            \#(OpenSSLCAFiles.commonConfiguration)
            [ leaf ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature
            extendedKeyUsage = serverAuth
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            subjectAltName = DNS:svc.test
            CNF
            openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key
            openssl req -x509 -new -config ca.cnf -key ca.key -subj "/CN=Service CA" -days 3650 -out ca.pem -extensions v3_ca
            openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out old.key
            openssl req -new -config ca.cnf -key old.key -subj "/CN=svc.test" -out old.csr
            openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in old.csr -out old.pem -extensions leaf \
              -startdate 20240101000000Z -enddate 20240401000000Z -notext 2>/dev/null
            """#)

    @Test(
        "ATTACK: pinpath request --json --resolve svc.test:PORT:127.0.0.1: the attacker's reproduction is tls_invalid, proven at the address dialled"
    )
    func replayedThroughResolve() throws {
        let scratch = try TemporaryDirectory()
        let server = try ReplayTLSServer(chain: ["\(Self.service)/old.pem"], in: scratch.path)
        defer { server.stop() }
        let result = try Shell.run([
            Shell.pinpath, "request", "--json", "--timeout", "5s", "--ca-file", "\(Self.service)/ca.pem", "--resolve",
            "svc.test:\(server.port):127.0.0.1", "https://svc.test:\(server.port)/",
        ])
        let error = try #require(try InterceptionExpiryTests.json(result.stdout)["error"] as? [String: Any], "\(result.stdout)")
        #expect(error["category"] as? String == "tls_invalid", "\(error)")
        let message = error["message"] as? String ?? ""
        #expect(message.contains("svc.test: the server \(Self.unproven)"), "\(message)")
        #expect(message.contains("a second handshake with 127.0.0.1:\(server.port) did not complete"), "\(message)")
        #expect(message.contains("certificate has expired at depth 0 (CN=svc.test)"), "\(message)")
        #expect(server.connections == 2)
    }

    @Test("ATTACK: pinpath request --json: a server whose second handshake shows another certificate has not proven the expired one's key")
    func otherLeafOnSecondHandshake() throws {
        let scratch = try TemporaryDirectory()
        try InterceptionExpiryTests.alternatingServer.write(toFile: scratch.file("alternate.py"), atomically: true, encoding: .utf8)
        let started = try Shell.spawnServer(
            [
                "/usr/bin/python3", scratch.file("alternate.py"), scratch.file("port"), scratch.file("log"), "1",
                Self.file("legit-chain.pem"), Self.file("legit.key"), Self.file("legit2-chain.pem"), Self.file("legit2.key"),
            ], portFile: scratch.file("port"), what: "the alternating server")
        defer { Shell.kill(started.pid) }
        let (_, error) = try Self.request("https://127.0.0.1:\(started.port)/")
        #expect(error["category"] as? String == "tls_invalid", "\(error)")
        let message = error["message"] as? String ?? ""
        #expect(message.contains("completed with another certificate (CN=legit2.internal)"), "\(message)")
        #expect(message.contains(Self.lapse), "\(message)")
    }

    @Test("pinpath request --json: the operator's expired certificate served with its key stays tls_expired, after one more handshake")
    func genuineExpiry() throws {
        let scratch = try TemporaryDirectory()
        let server = try TLSServer(certificate: Self.file("legit.pem"), key: Self.file("legit.key"), chain: [], in: scratch.path)
        defer { server.stop() }
        let url = "https://127.0.0.1:\(server.port)/"
        let (_, error) = try Self.request(url)
        #expect(error["category"] as? String == "tls_expired", "\(error)")
        #expect((error["message"] as? String ?? "").hasPrefix("GET \(url): 127.0.0.1: \(Self.lapse)"), "\(error)")
    }

    @Test(
        "pinpath request --json --proxy: through a CONNECT proxy the key cannot be proven the same way: tls_invalid, saying why, the expiry said"
    )
    func throughAProxy() throws {
        let scratch = try TemporaryDirectory()
        let server = try TLSServer(certificate: Self.file("legit.pem"), key: Self.file("legit.key"), chain: [], in: scratch.path)
        defer { server.stop() }
        let proxy = try ProxyServer(directory: scratch.path)
        defer { proxy.stop() }
        let (_, error) = try Self.request("https://127.0.0.1:\(server.port)/", ["--proxy", proxy.url()])
        #expect(error["category"] as? String == "tls_invalid", "\(error)")
        let message = error["message"] as? String ?? ""
        #expect(message.contains("\(Self.unproven) (the connection went through the proxy"), "\(message)")
        #expect(message.contains(Self.lapse), "\(message)")
        // One tunnel: no second connection was tried through it or around it.
        #expect(proxy.requests.map(\.method) == ["CONNECT"])
    }

    @Test(
        """
        ATTACK: pinpath request --proxy https://…: an https proxy's expired certificate replayed without its key is \
        tls_invalid, the missing proof named; the genuine expired proxy (its key held) stays tls_expired
        """)
    func replayedProxyCertificate() throws {
        let scratch = try TemporaryDirectory()
        let origin = try TLSServer(certificate: Self.file("legit.pem"), key: Self.file("legit.key"), chain: [], in: scratch.path)
        defer { origin.stop() }
        let replay = try ReplayTLSServer(chain: [Self.file("legit.pem")], in: scratch.path)
        defer { replay.stop() }
        let (replayStatus, replayed) = try Self.request(
            "https://127.0.0.1:\(origin.port)/", ["--proxy", "https://127.0.0.1:\(replay.port)"])
        #expect(replayStatus == 2, "\(replayed)")
        #expect(replayed["category"] as? String == "tls_invalid", "\(replayed)")
        #expect((replayed["message"] as? String ?? "").contains(Self.unproven), "\(replayed)")
        #expect((replayed["message"] as? String ?? "").contains(Self.lapse), "\(replayed)")

        let genuine = try ProxyServer(
            mode: .https(leaf: Self.file("legit.pem"), key: Self.file("legit.key"), chain: []), directory: scratch.path)
        defer { genuine.stop() }
        let (genuineStatus, proven) = try Self.request("https://127.0.0.1:\(origin.port)/", ["--proxy", genuine.url()])
        #expect(genuineStatus == 2, "\(proven)")
        #expect(proven["category"] as? String == "tls_expired", "\(proven)")
        #expect(!genuine.requests.contains { $0.method == "CONNECT" }, "no CONNECT to the refused proxy: \(genuine.requests)")
    }

    @Test(
        """
        ATTACK: pinpath run: the replay is tls_invalid in probe.completed and pinpath_probe_failure_info and writes no \
        tls.certificate_expired; the genuine expired server beside it stays tls_expired with its event
        """)
    func agent() async throws {
        let scene = try TemporaryDirectory()
        let replay = try ReplayTLSServer(chain: [Self.file("legit.pem")], in: scene.path)
        defer { replay.stop() }
        let genuine = try TLSServer(certificate: Self.file("legit.pem"), key: Self.file("legit.key"), chain: [], in: scene.path)
        defer { genuine.stop() }
        let listen = "127.0.0.1:\(try TLSServer.freePort())"
        try """
        events: { output: \(scene.file("events.jsonl")), probes: all }
        policies:
          internal: { mode: none, ca_file: \(Self.file("root.pem")) }
        endpoints:
          - { name: replay, url: "https://127.0.0.1:\(replay.port)/", policy: internal, interval: 2s, timeout: 2s, failure_threshold: 1 }
          - { name: genuine, url: "https://127.0.0.1:\(genuine.port)/", policy: internal, interval: 2s, timeout: 2s, failure_threshold: 1 }
        metrics:
          listen: "\(listen)"

        """.write(toFile: scene.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", scene.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.kill(agent) }

        var metrics = ""
        try await MetricsEndpointTests.wait("both categories in /metrics and two probes of the replay") {
            metrics = try MetricsEndpointTests.fetch(listen, "/metrics")?.body ?? ""
            return MetricsEndpointTests.value(#"pinpath_probe_failure_info{endpoint="replay",category="tls_invalid"}"#, in: metrics) == 1
                && MetricsEndpointTests.value(#"pinpath_probe_failure_info{endpoint="genuine",category="tls_expired"}"#, in: metrics) == 1
                && replay.connections >= 4
        }
        #expect(MetricsEndpointTests.value(#"pinpath_probe_failure_info{endpoint="replay",category="tls_expired"}"#, in: metrics) == nil)
        try await Task.sleep(for: .milliseconds(500))  // the last probe's events
        let events = scene.lines("events.jsonl").compactMap { try? InterceptionExpiryTests.json(String($0)) }
        let probes = events.filter { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == "replay" }
        #expect(probes.count >= 2, "\(probes)")
        for probe in probes {
            #expect(probe["error_category"] as? String == "tls_invalid", "\(probe)")
            #expect((probe["message"] as? String ?? "").contains(Self.unproven), "\(probe)")
        }
        let expired = events.filter { $0["event"] as? String == "tls.certificate_expired" }
        #expect(expired.map { $0["endpoint"] as? String } == ["genuine"], "\(expired)")
    }
}
