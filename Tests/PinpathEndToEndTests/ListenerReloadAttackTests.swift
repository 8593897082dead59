import Foundation
import PinpathTestSupport
import Testing

/// Issue 26, the attacker's second review: a reload that changed or removed `metrics.listen` applied the new file's
/// access to the listener still bound (none at all without `metrics:`, or "local only" for a pending loopback
/// address), and `/probe` reached the agent's own listener through addresses the own-listener check did not know.
@Suite("The attacker's second review of issue 26: listener access across reloads, the own listener, mixed costs", .serialized)
struct ListenerReloadAttackTests {
    /// `pinpath run` with a module `web` and the `metrics:` block given; `write` replaces the file for a reload.
    final class Agent {
        let directory: TemporaryDirectory
        let modules: String
        var pid: pid_t = 0

        init(metrics: String, modules: String = "modules:\n  web: { kind: http, timeout: 2s }\n") throws {
            directory = try TemporaryDirectory()
            self.modules = modules
            try write(metrics: metrics)
            let devNull = open("/dev/null", O_WRONLY)
            defer { close(devNull) }
            pid = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        }

        func write(metrics: String) throws {
            try """
            events: { output: \(directory.file("events.jsonl")) }
            reachability: { targets: [127.0.0.1] }
            \(modules)
            \(metrics)

            """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        }

        /// Writes `metrics`, sends SIGHUP and waits for its `config.reloaded`; returns that event. A SIGHUP that
        /// arrives while the agent starts is dropped (nothing to reload yet), so it is sent again until one lands.
        func reload(metrics: String) async throws -> [String: Any] {
            let before = events("config.reloaded").count
            try write(metrics: metrics)
            try await MetricsEndpointTests.wait("agent.started") { !events("agent.started").isEmpty }
            var signalled = ContinuousClock.now - .seconds(10)
            try await MetricsEndpointTests.wait("config.reloaded") {
                if ContinuousClock.now - signalled > .seconds(3) {
                    kill(pid, SIGHUP)
                    signalled = .now
                }
                return events("config.reloaded").count > before
            }
            return events("config.reloaded").last ?? [:]
        }

        func events(_ name: String) -> [[String: Any]] {
            directory.lines("events.jsonl").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["event"] as? String == name }
        }

        deinit { if pid > 0 { Shell.kill(pid) } }
    }

    /// The warning codes of a `config.reloaded` event.
    static func warningCodes(_ event: [String: Any]) -> [String] {
        (event["warnings"] as? [[String: Any]] ?? []).compactMap { $0["code"] as? String }
    }

    static func status(_ listen: String, _ path: String, _ options: [String] = []) throws -> Int? {
        try MetricsEndpointTests.fetch(listen, path, options)?.status
    }

    @Test("Attack: deleting metrics: and reloading leaves the running listener's basic_auth in force (401, not 200)")
    func removedMetricsKeepsCredentials() async throws {
        let listen = "127.0.0.1:\(try TLSServer.freePort())"
        let hash = try MetricsListenerAccessTests.bcrypt("right", cost: 4)
        let agent = try Agent(metrics: "metrics: { listen: \"\(listen)\", basic_auth: { users: { bob: \"\(hash)\" } } }")
        try await MetricsEndpointTests.wait("the listener") { try Self.status(listen, "/metrics") == 401 }
        let reloaded = try await agent.reload(metrics: "")
        #expect((reloaded["restart_required"] as? [String])?.contains("metrics") == true, "\(reloaded)")
        #expect(Self.warningCodes(reloaded).contains("listener_access_kept"), "\(reloaded)")
        #expect(try Self.status(listen, "/metrics") == 401)
        #expect(try Self.status(listen, "/probe?module=web&target=http://127.0.0.1:1/") == 401)
        #expect(try Self.status(listen, "/metrics", ["-u", "bob:right"]) == 200)
    }

    @Test("Attack: moving listen and dropping tls in a reload leaves the running listener on TLS with client certificates")
    func movedListenKeepsTLS() async throws {
        let localhost = LocalhostPKI.shared
        let clients = ClientCertificatePKI.shared
        let chain = try localhost.chainFile(
            "reload-attack-chain-\(UUID().uuidString).pem", [localhost.path("valid"), TestPKI.shared.path("inter")])
        let port = try TLSServer.freePort()
        let agent = try Agent(
            metrics: """
                metrics:
                  listen: "127.0.0.1:\(port)"
                  tls: { certificate: \(chain), key: \(localhost.path("valid", "key")), client_ca: \(clients.path("client-ca")), min_version: TLS13 }
                """)
        let withCertificate = [
            "--cacert", TestPKI.shared.path("root"), "--cert", clients.path("client"), "--key", clients.path("client", "key"),
        ]
        func https(_ options: [String]) throws -> String {
            try Shell.run(
                ["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"] + options
                    + ["https://localhost:\(port)/healthz"]
            ).stdout
        }
        try await MetricsEndpointTests.wait("the TLS listener") { try https(withCertificate) == "200" }
        let reloaded = try await agent.reload(metrics: "metrics: { listen: \"127.0.0.1:\(try TLSServer.freePort())\" }")
        #expect(Self.warningCodes(reloaded).contains("listener_access_kept"), "\(reloaded)")
        #expect(try Self.status("127.0.0.1:\(port)", "/probe?module=web&target=http://127.0.0.1:1/") == nil, "plain HTTP answered")
        #expect(try https(["--cacert", TestPKI.shared.path("root")]) == "000", "no client certificate, yet served")
        #expect(try https(withCertificate) == "200")
    }

    @Test("Attack: a reload that moves listen from 0.0.0.0 to loopback keeps /probe refused on the listener still on 0.0.0.0")
    func pendingLoopbackKeepsRefusal() async throws {
        let port = try TLSServer.freePort()
        // The module admits loopback targets: a 403 can only be the listener's refusal.
        let agent = try Agent(
            metrics: "metrics: { listen: \"0.0.0.0:\(port)\" }",
            modules: "modules:\n  web: { kind: http, timeout: 2s, targets: [127.0.0.0/8] }\n")
        let listen = "127.0.0.1:\(port)"
        let probe = "/probe?module=web&target=http://127.0.0.1:\(try TLSServer.freePort())/"
        func refusedAsReachable() throws -> Bool {
            let answer = try MetricsEndpointTests.fetch(listen, probe)
            return answer?.status == 403 && answer?.body.contains("other hosts can reach") == true
        }
        try await MetricsEndpointTests.wait("the listener") { try Self.status(listen, "/healthz") == 200 }
        #expect(try refusedAsReachable())
        _ = try await agent.reload(metrics: "metrics: { listen: \"127.0.0.1:\(port)\" }")
        #expect(try refusedAsReachable())
        // The listen address unchanged: a reload's access applies as before (basic_auth added → 401).
        let hash = try MetricsListenerAccessTests.bcrypt("right", cost: 4)
        let same = try await agent.reload(metrics: "metrics: { listen: \"0.0.0.0:\(port)\", basic_auth: { users: { bob: \"\(hash)\" } } }")
        #expect(!Self.warningCodes(same).contains("listener_access_kept"), "\(same)")
        #expect(try Self.status(listen, "/metrics") == 401)
    }

    @Test(
        "Attack: /probe of the agent's own listener through 0.0.0.0, 0, [::ffff:0.0.0.0] and 127.0.0.2 is refused (403); so is GCP's metadata address fd20:ce::254"
    )
    func ownListenerEveryAddress() async throws {
        let port = try TLSServer.freePort()
        let listen = "127.0.0.1:\(port)"
        let agent = try Agent(
            metrics: "metrics: { listen: \"\(listen)\" }",
            modules:
                "modules:\n  all: { kind: http, timeout: 2s, targets: [\"0.0.0.0/0\", \"::/0\"] }\n  web: { kind: http, timeout: 2s }\n")
        defer { withExtendedLifetime(agent) {} }
        try await MetricsEndpointTests.wait("the listener") { try Self.status(listen, "/healthz") == 200 }
        for host in ["127.0.0.1", "0.0.0.0", "0", "[::ffff:0.0.0.0]", "127.0.0.2", "[::ffff:127.0.0.1]", "[::1]", "[::]"] {
            let answer = try MetricsEndpointTests.fetch(listen, "/probe?module=all&target=http://\(host):\(port)/metrics")
            #expect(answer?.status == 403, "\(host): \(answer.map { "\($0.status) \($0.body)" } ?? "no answer")")
            #expect(answer?.body.contains("own listener") == true, "\(host)")
        }
        // GCP's IPv6 metadata address: refused by default, before any connection.
        let web = try MetricsEndpointTests.fetch(listen, "/probe?module=web&target=http://[fd20:ce::254]/computeMetadata/v1/")
        #expect(web?.status == 403 && web?.body.contains("the GCP metadata service's IPv6 address") == true, "\(web?.body ?? "")")
        // Another port of the same addresses is probed (nothing listens there: a failed probe, not a refusal).
        let other = try MetricsEndpointTests.fetch(listen, "/probe?module=all&target=http://0.0.0.0:\(try TLSServer.freePort())/")
        #expect(other?.status == 200)
        #expect(other?.body.contains("probe_success 0") == true, "\(other?.body ?? "")")
    }

    @Test("Attack: users of different bcrypt costs are warned about (mixed_bcrypt_costs) by check-config and run; one cost is not")
    func mixedBcryptCosts() async throws {
        let cheap = try MetricsListenerAccessTests.bcrypt("a", cost: 4)
        let dear = try MetricsListenerAccessTests.bcrypt("b", cost: 5)
        let same = try MetricsListenerAccessTests.bcrypt("c", cost: 4)
        let directory = try TemporaryDirectory()
        func checkConfig(_ users: String) throws -> (codes: [String], stderr: String) {
            try "reachability: { targets: [127.0.0.1] }\nmetrics: { listen: \"127.0.0.1:9818\", basic_auth: { users: \(users) } }\n"
                .write(toFile: directory.file("p.yaml"), atomically: true, encoding: .utf8)
            let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", directory.file("p.yaml")])
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            let text = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("p.yaml")])
            #expect(json.status == 0 && text.status == 0, "a warning, not an error")
            return (Self.warningCodes(object ?? [:]), text.stderr)
        }
        let mixed = try checkConfig("{ alice: \"\(cheap)\", bob: \"\(dear)\" }")
        #expect(mixed.codes.contains("mixed_bcrypt_costs"), "\(mixed.codes)")
        #expect(mixed.stderr.contains("metrics.basic_auth.users: the users' bcrypt hashes have different costs (4, 5)"), "\(mixed.stderr)")
        #expect(mixed.stderr.contains("tells which users exist"))
        #expect(!mixed.stderr.contains(String(cheap.dropFirst(7))), "no hash shown")
        let even = try checkConfig("{ alice: \"\(cheap)\", carol: \"\(same)\" }")
        #expect(!even.codes.contains("mixed_bcrypt_costs"), "\(even.codes)")
        // pinpath run: agent.started carries it.
        let agent = try Agent(
            metrics:
                "metrics: { listen: \"127.0.0.1:\(try TLSServer.freePort())\", basic_auth: { users: { alice: \"\(cheap)\", bob: \"\(dear)\" } } }"
        )
        try await MetricsEndpointTests.wait("agent.started") { !agent.events("agent.started").isEmpty }
        #expect(Self.warningCodes(agent.events("agent.started").first ?? [:]).contains("mixed_bcrypt_costs"))
    }
}
