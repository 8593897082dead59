import Foundation
import PinpathTestSupport
import Testing

/// `metrics.basic_auth` and `metrics.tls` on the built `pinpath run`: a real Prometheus scrapes through
/// `basic_auth` and `tls_config` (a CA and client certificates from the test PKI), curl and openssl play the
/// clients that must be turned away.
@Suite("Metrics listener access", .serialized)
struct MetricsListenerAccessTests {
    typealias Answer = MetricsEndpointTests.Answer

    /// A bcrypt hash of `password`, made with Python's crypt module (libcrypt, as an operator's `mkpasswd` would).
    static func bcrypt(_ password: String, cost: Int = 10) throws -> String {
        let script = "import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=\(1 << cost))))"
        return try Shell.run(["/usr/bin/python3", "-W", "ignore", "-c", script, password]).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `pinpath run` with only a reachability target and `metrics:` as given (its `listen` is added).
    final class Agent {
        let directory: TemporaryDirectory
        let listen: String
        var pid: pid_t = 0

        init(metrics: String, directory: TemporaryDirectory? = nil) throws {
            self.directory = try directory ?? TemporaryDirectory()
            listen = "127.0.0.1:\(try TLSServer.freePort())"
            try write(metrics: metrics)
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            pid = try Shell.spawn([Shell.pinpath, "run", "--config", self.directory.file("pinpath.yaml")], stdout: devNull)
        }

        func write(metrics: String) throws {
            try """
            events: { output: \(directory.file("events.jsonl")) }
            reachability: { targets: [127.0.0.1] }
            metrics:
              listen: "\(listen)"
            \(metrics)

            """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        }

        /// curl against the listener over plain HTTP.
        func fetch(_ path: String, _ options: [String] = []) throws -> Answer? { try MetricsEndpointTests.fetch(listen, path, options) }

        var events: [[String: Any]] {
            directory.lines("events.jsonl").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        deinit { if pid > 0 { Shell.kill(pid) } }
    }

    static func value(_ series: String, in text: String) -> Double? { MetricsEndpointTests.value(series, in: text) }

    @Test(
        "Prometheus scrapes through basic_auth: right credentials up 1; wrong or none 401, counted, up 0; /healthz open",
        .enabled(if: PrometheusServer.executable != nil, "needs prometheus (Debian: prometheus)"))
    func basicAuthWithPrometheus() async throws {
        let hash = try Self.bcrypt("right password")
        let agent = try Agent(metrics: "  basic_auth: { users: { prometheus: \"\(hash)\" } }")
        try await MetricsEndpointTests.wait("the listener") { try agent.fetch("/healthz")?.status == 200 }

        let none = try #require(try agent.fetch("/metrics"))
        #expect(none.status == 401)
        #expect(none.headers["www-authenticate"] == #"Basic realm="pinpath""#)
        #expect(!none.body.contains("pinpath_build_info"))
        let wrong = try #require(try agent.fetch("/metrics", ["-u", "prometheus:wrong"]))
        #expect(wrong.status == 401)
        #expect(!wrong.body.contains("pinpath_"))
        #expect(try agent.fetch("/readyz", ["-u", "nobody:right password"])?.status == 401)
        #expect(try agent.fetch("/healthz")?.status == 200)
        let right = try #require(try agent.fetch("/metrics", ["-u", "prometheus:right password"]))
        #expect(right.status == 200)
        #expect(Self.value(#"pinpath_metrics_auth_failures_total{reason="missing"}"#, in: right.body) == 1)
        #expect(Self.value(#"pinpath_metrics_auth_failures_total{reason="wrong"}"#, in: right.body) == 2)
        // The status page asks for the same credentials (a browser prompts, then its script's fetches carry them).
        #expect(try agent.fetch("/")?.status == 401)
        #expect(try agent.fetch("/status.js", ["-u", "prometheus:wrong"])?.status == 401)
        #expect(try agent.fetch("/", ["-u", "prometheus:right password"])?.status == 200)

        let prometheus = try PrometheusServer(
            jobs: [
                .init(
                    name: "right", target: agent.listen, settings: [#"basic_auth: { username: prometheus, password: "right password" }"#]),
                .init(name: "wrong", target: agent.listen, settings: [#"basic_auth: { username: prometheus, password: "wrong" }"#]),
                .init(name: "none", target: agent.listen),
            ], directory: agent.directory.path)
        defer { prometheus.stop() }
        try await MetricsEndpointTests.wait("Prometheus's scrapes", timeout: .seconds(30)) {
            let up = try ["right", "wrong", "none"].map { try prometheus.value(#"up{job=""# + $0 + #""}"#) }
            return up == [1, 0, 0]
        }
        // The failures Prometheus's own scrapes caused, read through Prometheus.
        try await MetricsEndpointTests.wait("the failures counted") {
            let wrong = try prometheus.value(#"pinpath_metrics_auth_failures_total{job="right",reason="wrong"}"#) ?? 0
            let missing = try prometheus.value(#"pinpath_metrics_auth_failures_total{job="right",reason="missing"}"#) ?? 0
            return wrong > 2 && missing > 1
        }
        print(
            "Prometheus: up right=\(try prometheus.value(#"up{job="right"}"#) ?? -1) wrong=\(try prometheus.value(#"up{job="wrong"}"#) ?? -1) none=\(try prometheus.value(#"up{job="none"}"#) ?? -1)"
        )
        // No secret reached the events.
        let events = agent.directory.lines("events.jsonl").joined(separator: "\n")
        #expect(!events.contains("right password"))
        #expect(!events.contains(String(hash.dropFirst(7))))
    }

    @Test(
        "Prometheus scrapes through tls_config with a client certificate (mutual TLS): up 1; without one: up 0",
        .enabled(if: PrometheusServer.executable != nil, "needs prometheus (Debian: prometheus)"))
    func mutualTLSWithPrometheus() async throws {
        let localhost = LocalhostPKI.shared
        let clients = ClientCertificatePKI.shared
        let directory = try TemporaryDirectory()
        let chain = try localhost.chainFile(
            "listener-chain-\(UUID().uuidString).pem", [localhost.path("valid"), TestPKI.shared.path("inter")])
        let agent = try Agent(
            metrics: """
                  tls:
                    certificate: \(chain)
                    key: \(localhost.path("valid", "key"))
                    client_ca: \(clients.path("client-ca"))
                """, directory: directory)
        let port = try #require(agent.listen.split(separator: ":").last)
        let url = "https://localhost:\(port)"
        let ca = ["--cacert", TestPKI.shared.path("root")]
        let withCertificate = ca + ["--cert", clients.path("client"), "--key", clients.path("client", "key")]
        func curl(_ options: [String], _ path: String = "/metrics") throws -> Shell.Result {
            try Shell.run(
                ["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"] + options + ["\(url)\(path)"])
        }
        try await MetricsEndpointTests.wait("the TLS listener") { try curl(withCertificate, "/healthz").stdout == "200" }

        #expect(try curl(withCertificate).stdout == "200")
        // No client certificate, or one from a root the client CA does not hold: the handshake fails.
        let without = try curl(ca)
        #expect(without.stdout == "000")
        #expect(without.status != 0)
        let stranger = try curl(ca + ["--cert", clients.path("stranger"), "--key", clients.path("stranger", "key")])
        #expect(stranger.stdout == "000")
        // A plain HTTP client gets the connection closed, not a hang (curl's max-time is 10 s).
        let started = ContinuousClock.now
        let plain = try Shell.run([
            "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "http://\(agent.listen)/metrics",
        ])
        let plainTime = ContinuousClock.now - started
        #expect(plain.stdout == "000")
        #expect(plain.status == 52 || plain.status == 56, "curl exit \(plain.status)")  // empty reply, or reset
        print("plain HTTP on the TLS listener: curl exit \(plain.status) after \(plainTime)")

        let prometheus = try PrometheusServer(
            jobs: [
                .init(
                    name: "mtls", target: "localhost:\(port)",
                    settings: [
                        "scheme: https",
                        "tls_config: { ca_file: \(TestPKI.shared.path("root")), cert_file: \(clients.path("client")), key_file: \(clients.path("client", "key")) }",
                    ]),
                .init(
                    name: "nocert", target: "localhost:\(port)",
                    settings: ["scheme: https", "tls_config: { ca_file: \(TestPKI.shared.path("root")) }"]),
            ], directory: directory.path)
        defer { prometheus.stop() }
        try await MetricsEndpointTests.wait("Prometheus's scrapes", timeout: .seconds(30)) {
            let up = try ["mtls", "nocert"].map { try prometheus.value(#"up{job=""# + $0 + #""}"#) }
            return up == [1, 0]
        }
        #expect(try prometheus.value(#"pinpath_build_info{job="mtls"}"#) == 1)
    }

    @Test("A wrong password and a right one cost about the same on the first check; a flood of wrong ones does not keep the right one out")
    func floodOfWrongPasswords() async throws {
        let hash = try Self.bcrypt("right password")
        // `other` and five more users whose first checks come during the flood.
        let others = try (0..<5).map { "other\($0): \"\(try Self.bcrypt("x"))\"" }.joined(separator: ", ")
        let agent = try Agent(
            metrics: "  basic_auth: { users: { prometheus: \"\(hash)\", other: \"\(try Self.bcrypt("x"))\", \(others) } }")
        try await MetricsEndpointTests.wait("the listener") { try agent.fetch("/healthz")?.status == 200 }
        func timed(_ credentials: String) throws -> (Int, Duration) {
            let started = ContinuousClock.now
            let status = try agent.fetch("/metrics", ["-u", credentials])?.status ?? 0
            return (status, ContinuousClock.now - started)
        }
        // First checks (none cached yet): measured and printed, not asserted.
        let wrong = try timed("other:wrong")
        let unknown = try timed("mallory:right password")
        let right = try timed("prometheus:right password")
        let cached = try timed("prometheus:right password")
        #expect([wrong.0, unknown.0, right.0, cached.0] == [Int](arrayLiteral: 401, 401, 200, 200))
        print("first check: wrong password \(wrong.1), unknown user \(unknown.1), right password \(right.1); cached right \(cached.1)")

        // Sixteen clients of another local user (the threat model's local attacker) sending wrong passwords as fast
        // as they are answered: more than that user's share of connections, so they also take each other's slots.
        // Four more local users (uids 65530 to 65533: four peers, every slot of the listener between them) ask and do
        // not wait for the answer, 16 connections at a time each: each peer keeps its 8 checks waiting (a single
        // queue for everyone was full, and the right password's first check got 503).
        let flood = (0..<16).map { index in
            "while :; do curl -s -o /dev/null --max-time 5 -u prometheus:wrong\(index) http://\(agent.listen)/metrics; done"
        }
        let script = #"""
            import base64, socket, sys, time
            host, port = sys.argv[1].rsplit(":", 1)
            header = base64.b64encode(b"prometheus:held" + sys.argv[2].encode()).decode()
            request = ("GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic %s\r\n\r\n" % header).encode()
            held = []
            while True:
                try:
                    s = socket.create_connection((host, int(port)), timeout=2)
                    s.sendall(request)
                    held.append(s)
                except OSError:
                    time.sleep(0.01)
                if len(held) >= 16:
                    held.pop(0).close()
                time.sleep(0.002)
            """#
        let users =
            flood.map { (65534, ["/bin/sh", "-c", $0]) }
            + (0..<4).map { index in (65530 + index, ["/usr/bin/python3", "-c", script, agent.listen, String(index)]) }
        let pids = try users.map { uid, command in
            try Shell.spawn(["/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups"] + command)
        }
        defer { for pid in pids { Shell.kill(pid) } }
        try await Task.sleep(for: .seconds(1))
        var served = 0
        var latencies: [Duration] = []
        for _ in 0..<10 {
            let (status, elapsed) = try timed("prometheus:right password")
            if status == 200 { served += 1 }
            latencies.append(elapsed)
            try await Task.sleep(for: .milliseconds(300))
        }
        let body = try agent.fetch("/metrics", ["-u", "prometheus:right password"])?.body ?? ""
        let failures = Self.value(#"pinpath_metrics_auth_failures_total{reason="wrong"}"#, in: body) ?? 0
        print(
            "during a flood of wrong passwords: \(served)/10 right scrapes served, latencies \(latencies), \(Int(failures)) wrong passwords counted"
        )
        #expect(served == 10)
        #expect(failures > 10)
        // A right password not yet cached is still checked, behind the flood.
        let otherFirsts = try (0..<5).map { try timed("other\($0):x") }
        print("right passwords' first checks during the flood: \(otherFirsts.map { "\($0.0) in \($0.1)" })")
        #expect(otherFirsts.allSatisfy { $0.0 == 200 }, "\(otherFirsts.map(\.0))")
    }

    @Test("A TLS client that stalls in the handshake or sends garbage is closed; the listener goes on serving")
    func hostileTLSClients() async throws {
        let localhost = LocalhostPKI.shared
        let chain = try localhost.chainFile(
            "hostile-chain-\(UUID().uuidString).pem", [localhost.path("valid"), TestPKI.shared.path("inter")])
        let agent = try Agent(metrics: "  tls: { certificate: \(chain), key: \(localhost.path("valid", "key")) }")
        let port = try #require(agent.listen.split(separator: ":").last)
        let healthz = [
            "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--cacert", TestPKI.shared.path("root"),
        ]
        try await MetricsEndpointTests.wait("the listener") {
            try Shell.run(healthz + ["https://localhost:\(port)/healthz"]).stdout == "200"
        }
        // Each client: what it sends, then how long until the listener closed (or 20 s: a hang).
        let script = #"""
            import socket, sys, time, os
            host, port, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
            s = socket.create_connection((host, port))
            s.settimeout(20)
            if what == "stall": s.sendall(bytes([0x16, 0x03, 0x01]))
            else: s.sendall(os.urandom(65536))
            start = time.monotonic()
            try:
                while s.recv(4096): pass
                print("closed %.2f" % (time.monotonic() - start))
            except ConnectionResetError:
                print("reset %.2f" % (time.monotonic() - start))
            except socket.timeout:
                print("hang")
            """#
        for behaviour in ["stall", "garbage"] {
            let result = try Shell.run(["/usr/bin/python3", "-c", script, "127.0.0.1", String(port), behaviour])
            print("TLS listener, \(behaviour) client: \(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
            #expect(result.stdout.hasPrefix("closed") || result.stdout.hasPrefix("reset"), "\(behaviour): \(result.stdout)")
        }
        #expect(try Shell.run(healthz + ["https://localhost:\(port)/healthz"]).stdout == "200")
    }

    @Test("min_version: TLS13 turns away a TLS 1.2 client; the default (TLS12) serves it")
    func minimumVersion() async throws {
        let localhost = LocalhostPKI.shared
        let chain = try localhost.chainFile(
            "version-chain-\(UUID().uuidString).pem", [localhost.path("valid"), TestPKI.shared.path("inter")])
        let tls = "certificate: \(chain), key: \(localhost.path("valid", "key"))"
        func status(_ agent: Agent, _ options: [String]) throws -> String {
            let port = agent.listen.split(separator: ":").last ?? ""
            return try Shell.run(
                [
                    "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--cacert",
                    TestPKI.shared.path("root"),
                ]
                    + options + ["https://localhost:\(port)/healthz"]
            ).stdout
        }
        let strict = try Agent(metrics: "  tls: { \(tls), min_version: TLS13 }")
        let lenient = try Agent(metrics: "  tls: { \(tls) }")
        try await MetricsEndpointTests.wait("the listeners") {
            let answers = try [strict, lenient].map { try status($0, []) }
            return answers == ["200", "200"]
        }
        #expect(try status(strict, ["--tls-max", "1.2"]) == "000")
        #expect(try status(lenient, ["--tls-max", "1.2"]) == "200")
        #expect(try status(strict, ["--tlsv1.3"]) == "200")
    }

    @Test("A reload rotates credentials and certificates; a reload with a missing certificate keeps the old ones")
    func reload() async throws {
        let localhost = LocalhostPKI.shared
        let first = try Self.bcrypt("first", cost: 4)
        let second = try Self.bcrypt("second", cost: 4)
        let chain = try localhost.chainFile(
            "reload-chain-\(UUID().uuidString).pem", [localhost.path("valid"), TestPKI.shared.path("inter")])
        let tls = "  tls: { certificate: \(chain), key: \(localhost.path("valid", "key")) }\n"
        let agent = try Agent(metrics: tls + "  basic_auth: { users: { p: \"\(first)\" } }")
        let port = try #require(agent.listen.split(separator: ":").last)
        func status(_ user: String) throws -> String {
            try Shell.run([
                "/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--cacert", TestPKI.shared.path("root"),
                "-u", user, "https://localhost:\(port)/metrics",
            ]).stdout
        }
        try await MetricsEndpointTests.wait("the listener") { try status("p:first") == "200" }
        try agent.write(metrics: tls + "  basic_auth: { users: { p: \"\(second)\" } }")
        kill(agent.pid, SIGHUP)
        try await MetricsEndpointTests.wait("the new password") { try status("p:second") == "200" }
        #expect(try status("p:first") == "401")
        // A certificate that is gone: the reload is rejected, the listener keeps serving with the old files.
        try agent.write(
            metrics:
                "  tls: { certificate: \(chain).gone, key: \(localhost.path("valid", "key")) }\n  basic_auth: { users: { p: \"\(first)\" } }"
        )
        kill(agent.pid, SIGHUP)
        try await MetricsEndpointTests.wait("config.rejected") { agent.events.contains { $0["event"] as? String == "config.rejected" } }
        #expect(try status("p:second") == "200")
        let rejected = agent.events.last { $0["event"] as? String == "config.rejected" }
        #expect("\(rejected ?? [:])".contains("metrics.tls.certificate"))
    }

    @Test("check-config: the TLS files and users shown, hashes never; a key not the certificate's refused with its position")
    func checkConfig() throws {
        let localhost = LocalhostPKI.shared
        let directory = try TemporaryDirectory()
        let hash = try Self.bcrypt("right", cost: 4)
        let good = """
            metrics:
              listen: 0.0.0.0:9818
              tls: { certificate: \(localhost.path("valid")), key: \(localhost.path("valid", "key")), client_ca: \(ClientCertificatePKI.shared.path("client-ca")) }
              basic_auth: { users: { prometheus: "\(hash)" } }
            reachability: { targets: [127.0.0.1] }

            """
        try good.write(toFile: directory.file("good.yaml"), atomically: true, encoding: .utf8)
        let shown = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("good.yaml")])
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("basic_auth prometheus (hashes set)"))
        #expect(shown.stdout.contains("client certificates required"))
        #expect(!shown.stdout.contains(String(hash.dropFirst(7))))
        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", directory.file("good.yaml")])
        #expect(!json.stdout.contains(String(hash.dropFirst(7))))

        let mismatched = good.replacingOccurrences(
            of: localhost.path("valid", "key"), with: ClientCertificatePKI.shared.path("client", "key"))
        try mismatched.write(toFile: directory.file("bad.yaml"), atomically: true, encoding: .utf8)
        let refused = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("bad.yaml")])
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("bad.yaml:3:"))
        #expect(refused.stderr.contains("metrics.tls.key"))
        #expect(refused.stderr.contains("does not belong to the certificate"))
        let encrypted = good.replacingOccurrences(
            of: "\(localhost.path("valid")), key: \(localhost.path("valid", "key"))",
            with: "\(ClientCertificatePKI.shared.path("client")), key: \(ClientCertificatePKI.shared.path("client-encrypted", "key"))")
        try encrypted.write(toFile: directory.file("encrypted.yaml"), atomically: true, encoding: .utf8)
        let refusedEncrypted = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("encrypted.yaml")])
        #expect(refusedEncrypted.stderr.contains("metrics.tls.key"))
        #expect(refusedEncrypted.stderr.contains("encrypted"))
    }

    @Test(
        "Attack: a metrics.tls certificate or key path that is a FIFO a writer holds open is refused at its line at once, not a hang",
        arguments: ["certificate", "key"])
    func fifoRefused(key: String) throws {
        let localhost = LocalhostPKI.shared
        let directory = try TemporaryDirectory()
        let fifo = directory.file("listener.pem")
        try #require(mkfifo(fifo, 0o600) == 0)
        // Opened for reading and writing, a FIFO opens at once and keeps a writer: a read of it waits for ever.
        let writer = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0)
        defer { close(writer) }
        let files =
            key == "certificate"
            ? "certificate: \(fifo), key: \(localhost.path("valid", "key"))" : "certificate: \(localhost.path("valid")), key: \(fifo)"
        let yaml = "metrics:\n  listen: 127.0.0.1:9818\n  tls: { \(files) }\nreachability: { targets: [127.0.0.1] }\n"
        try yaml.write(toFile: directory.file("fifo.yaml"), atomically: true, encoding: .utf8)
        // `timeout` ends a check that waits on the FIFO (exit 124) instead of hanging the test.
        let refused = try Shell.run(["timeout", "20", Shell.pinpath, "check-config", "--config", directory.file("fifo.yaml")])
        #expect(refused.status == 78, "exit \(refused.status): \(refused.stderr)")
        #expect(
            refused.stderr.contains("metrics.tls.\(key)") && refused.stderr.contains("is a FIFO (named pipe), not a regular file"),
            "\(refused.stderr)")
    }
}
