import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// `metrics.basic_auth` and `metrics.probe_unauthenticated`: the hashes, libcrypt's bcrypt, the configuration's
/// refusals and the gate's decision per route.
@Suite("Metrics listener access")
struct ListenerAccessTests {
    /// A bcrypt hash of `password` at `cost`, made by Python's crypt module (the same libcrypt, another caller).
    static func bcrypt(_ password: String, cost: Int = 4) throws -> String {
        let script = "import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=\(1 << cost))))"
        let result = try Shell.run(["/usr/bin/python3", "-W", "ignore", "-c", script, password])
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("The system's crypt(3) is bcrypt: Openwall's vectors for $2a$, and $2b$/$2y$ hashes")
    func libcryptKnowsBcrypt() throws {
        // crypt_blowfish's own test vectors (Openwall, wrapper.c).
        let vector = try BcryptHash(parsing: "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")
        #expect(vector.matches("U*U"))
        #expect(!vector.matches("U*U*"))
        #expect(!vector.matches(""))
        let made = try Self.bcrypt("correct horse")
        #expect(made.hasPrefix("$2b$04$"))
        let hash = try BcryptHash(parsing: made)
        #expect(hash.matches("correct horse"))
        #expect(!hash.matches("correct horsE"))
        #expect(!hash.matches("correct horse\u{0}x"))
        // $2y$ is PHP's and htpasswd's spelling of the same algorithm.
        let y = try BcryptHash(parsing: "$2y$" + made.dropFirst(4))
        #expect(y.matches("correct horse"))
    }

    @Test(
        "A value that is not a bcrypt hash is refused without being repeated",
        arguments: [
            ("hunter2-plaintext", "does not start with $"),
            ("$6$saltsalt$" + String(repeating: "a", count: 86), "other crypt methods"),
            ("$2x$10$" + String(repeating: "a", count: 53), "variant"),
            ("$2b$10$" + String(repeating: "a", count: 20), "60"),
            ("$2b$99$" + String(repeating: "a", count: 53), "cost"),
            ("$2b$10$" + String(repeating: "!", count: 53), "alphabet"),
        ])
    func refusals(value: String, reason: String) {
        #expect(throws: BcryptHash.ParseError.self) { try BcryptHash(parsing: value) }
        do {
            _ = try BcryptHash(parsing: value)
        } catch {
            #expect(error.description.contains(reason))
            #expect(!error.description.contains(value))
        }
    }

    @Test("A plaintext password in metrics.basic_auth is refused at load, naming the user and never quoting it")
    func plaintextRefusedAtLoad() throws {
        let good = try Self.bcrypt("right")
        let problems = configurationProblems(
            """
            metrics:
              listen: 127.0.0.1:9818
              basic_auth:
                users:
                  prometheus: "\(good)"
                  alice: "Tr0ub4dor&3"
            """)
        #expect(problems.count == 1)
        let problem = try #require(problems.first)
        #expect(problem.hasPrefix("test.yaml:6:14: metrics.basic_auth.users.alice: user \"alice\": not a bcrypt hash"))
        #expect(problem.contains("plaintext password is never accepted"))
        #expect(!problem.contains("Tr0ub4dor"))
        #expect(
            configurationProblems("metrics: { listen: 127.0.0.1:9818, basic_auth: { users: {} } }").first?.contains(
                "no users") == true)
        #expect(
            configurationProblems("metrics: { listen: 127.0.0.1:9818, basic_auth: { users: { \"a:b\": \"\(good)\" } } }").first?
                .contains("colon") == true)
    }

    @Test("The hashes never show: description, dump, check-config's summaries")
    func hashesNeverShow() throws {
        let hash = try Self.bcrypt("right")
        let configuration = try loadConfiguration(
            "metrics: { listen: 127.0.0.1:9818, basic_auth: { users: { prometheus: \"\(hash)\" } } }")
        var dumped = ""
        dump(configuration, to: &dumped)
        for rendering in [String(describing: configuration), String(reflecting: configuration), dumped] {
            #expect(!rendering.contains(String(hash.dropFirst(7))))
        }
        #expect(configuration.metricsBasicAuthUsers == ["prometheus"])
    }

    @Test("A listener other hosts reach, without credentials nor probe_unauthenticated, is warned about")
    func unprotectedListenerWarned() throws {
        let hash = try Self.bcrypt("right")
        let open = try loadConfiguration("metrics: { listen: 0.0.0.0:9818 }")
        let warning = try #require(open.warnings.first { $0.code == .unprotectedListener })
        #expect(warning.description.contains("metrics.basic_auth"))
        #expect(warning.description.contains("probe_unauthenticated"))
        #expect(open.metricsAccess.requirement(for: "/probe") == .refused(open.metricsAccess.probeRefusal!))
        #expect(open.metricsAccess.requirement(for: "/metrics") == .open)
        for quiet in [
            "metrics: { listen: 127.0.0.1:9818 }", "metrics: { listen: \"[::1]:9818\" }", "metrics: { listen: /run/pinpath.sock }",
            "metrics: { listen: 0.0.0.0:9818, probe_unauthenticated: true }",
            "metrics: { listen: \"[::]:9818\", basic_auth: { users: { p: \"\(hash)\" } } }",
        ] {
            let configuration = try loadConfiguration(quiet)
            #expect(!configuration.warnings.contains { $0.code == .unprotectedListener }, "\(quiet)")
            #expect(configuration.metricsAccess.probeRefusal == nil, "\(quiet)")
        }
    }

    @Test("Every route but /healthz asks for credentials when users are configured")
    func routes() throws {
        let users = BasicAuthUsers(hashes: ["p": try BcryptHash(parsing: try Self.bcrypt("right"))])
        let access = ListenerAccess(basicAuth: users, listen: .tcp(host: "0.0.0.0", port: 9818))
        #expect(access.requirement(for: "/healthz") == .open)
        for route in ["/metrics", "/readyz", "/probe", "/", "/nope"] { #expect(access.requirement(for: route) == .credentials) }
        #expect(ListenerAccess().requirement(for: "/probe") == .open)
    }

    @Test(
        "Authorization: Basic is read as RFC 7617 says, and anything else is no credentials",
        arguments: [
            ("Basic cHJvbWV0aGV1czpzM2NyM3Q=", "prometheus", "s3cr3t"),
            ("basic cHJvbWV0aGV1czpzM2NyM3Q=", "prometheus", "s3cr3t"),
            ("Basic YTpiOmM=", "a", "b:c"),
            ("Basic Og==", "", ""),
        ])
    func credentials(header: String, user: String, password: String) throws {
        let credentials = try #require(BasicCredentials(header: header))
        #expect(credentials.user == user)
        #expect(credentials.password == password)
    }

    @Test("Malformed Authorization headers", arguments: [nil, "", "Bearer abc", "Basic", "Basic !!!!", "Basic YWJj", "Basic YQ"])
    func malformed(header: String?) {
        #expect(BasicCredentials(header: header) == nil)
    }

    @Test("A wrong password, an unknown user and a right one cost a bcrypt check each the first time (measured, not asserted)")
    func timing() throws {
        let users = BasicAuthUsers(hashes: ["prometheus": try BcryptHash(parsing: try Self.bcrypt("right", cost: 10))])
        func measure(_ user: String, _ password: String) -> (Bool, Duration) {
            var result = false
            let elapsed = ContinuousClock().measure { result = users.verify(user: user, password: password) }
            return (result, elapsed)
        }
        let right = measure("prometheus", "right")
        let wrong = measure("prometheus", "wrong")
        let unknown = measure("mallory", "right")
        #expect(right.0 && !wrong.0 && !unknown.0)
        print("bcrypt cost 10, first check: right \(right.1), wrong password \(wrong.1), unknown user \(unknown.1)")
    }

    @Test(
        "A loopback or Unix socket listener takes only Host values naming this host; one other hosts reach takes any",
        arguments: [
            ("localhost", true), ("localhost:9818", true), ("LocalHost.", true), ("127.0.0.1:9818", true), ("127.9.9.9", true),
            ("[::1]:9818", true), ("[::1]", true), ("[::ffff:127.0.0.1]:1", true), ("evil.example", false),
            ("evil.example:9818", false), ("localhost.evil.example", false), ("127.0.0.1.evil.example", false),
            ("0x7f.1", false), ("[::1]x", false), ("localhost:", false), ("localhost:99999999", false), ("10.0.0.1:9818", false),
            ("", false),
        ])
    func hostNamesThisHost(host: String, served: Bool) {
        for listen in [MetricsListenAddress.tcp(host: "127.0.0.1", port: 9818), .unix(path: "/run/pinpath.sock")] {
            let access = ListenerAccess(listen: listen)
            #expect((access.requirement(for: "/api/v1/status", host: host) == .open) == served, "\(host) on \(listen)")
            #expect(access.requirement(for: "/healthz", host: host) == .open)
        }
        #expect(ListenerAccess(listen: .tcp(host: "127.0.0.1", port: 9818)).requirement(for: "/metrics", host: nil) == .open)
        #expect(ListenerAccess(listen: .tcp(host: "0.0.0.0", port: 9818)).requirement(for: "/metrics", host: host) == .open)
    }
}
