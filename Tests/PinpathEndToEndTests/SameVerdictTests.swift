import Foundation
import PinpathTestSupport
import Testing

/// One engine judges every chain: the same chain, served by `openssl s_server` and read from a file, gets the
/// same verdict from the request core (`pinpath request`), the agent (`pinpath run --once`), `audit` and
/// `verify`. The leaves are for `localhost` (``LocalhostPKI``), the name the request core and the agent resolve
/// to the loopback server; every run trusts only the test PKI's store.
@Suite("The same verdict from request, the agent, audit and verify")
struct SameVerdictTests {
    /// A served chain, the pins and profile it is judged with, and what must be known of the verdict.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Certificate files, leaf first.
        var served: [String]
        var pin: String?
        var profile: String?
        var maxDepth: Int?
        /// Rejected by a profile rule, which `failure.rule` names.
        var byRule = false
        /// `verify --json`'s result and chain error, when the answer does not depend on the names rules.
        var result: String?
        var verifyError: Int?
        var testDescription: String { name }
    }

    /// trusted, pin_mismatch or invalid (chain or host), and the failure's first line.
    struct Verdict: Equatable, CustomStringConvertible {
        var kind: String
        var message: String?
        var description: String { "\(kind)\(message.map { ": \($0)" } ?? "")" }
    }

    static let cases: [Case] = {
        let pki = TestPKI.shared
        let localhost = LocalhostPKI.shared
        let inter = pki.path("inter")
        return [
            Case(name: "valid", served: [localhost.path("valid"), inter], result: "trusted"),
            Case(name: "expired", served: [localhost.path("expired"), inter], result: "chain_invalid", verifyError: 10),
            Case(name: "wrong host", served: [pki.path("valid"), inter], result: "host_mismatch"),
            Case(
                name: "untrusted root", served: [localhost.path("untrusted"), pki.path("rogueroot")], result: "chain_invalid",
                verifyError: 19),
            // OpenSSL 3.0 alone accepts it (its CN fallback); the webpki names rule rejects it: compared, not fixed.
            Case(name: "CN-only", served: [localhost.path("cnonly"), inter]),
            Case(name: "CN-only, profile rfc5280", served: [localhost.path("cnonly"), inter], profile: "rfc5280"),
            Case(name: "valid, pinned intermediate", served: [localhost.path("valid"), inter], pin: "inter", result: "trusted"),
            Case(name: "valid, pinned elsewhere", served: [localhost.path("valid"), inter], pin: "otherroot", result: "pin_mismatch"),
            // leaf → intermediate → root is 3 certificates; the maximum depth is checked by a profile rule.
            Case(name: "valid, max depth 3", served: [localhost.path("valid"), inter], maxDepth: 3, result: "trusted"),
            Case(name: "valid, max depth 2", served: [localhost.path("valid"), inter], maxDepth: 2, byRule: true, result: "chain_invalid"),
        ]
    }()

    @Test("Served and at rest, the four paths agree; and the verdict is the known one", arguments: cases)
    func sameVerdict(_ row: Case) throws {
        let pki = TestPKI.shared
        let store = pki.path("store")
        let pin = try row.pin.map { "sha256/\(try pki.opensslPin($0))" }
        var options: [String] = []
        if let pin { options += ["--pin", pin] }
        if let profile = row.profile { options += ["--profile", profile] }
        if let depth = row.maxDepth { options += ["--max-depth", "\(depth)"] }

        let file = try LocalhostPKI.shared.chainFile("same-\(row.name.filter { $0.isLetter }).pem", row.served)
        let verified = try Shell.run([Shell.pinpath, "verify", file, "--host", "localhost", "--ca-file", store, "--json"] + options)
        let object = try AuditCommandTests.object(verified.stdout)
        let verify = try Self.verdict(json: object, status: verified.status)

        let server = try TLSServer(
            certificate: row.served[0], key: row.served[0].replacingOccurrences(of: ".pem", with: ".key"),
            chain: Array(row.served.dropFirst()), in: LocalhostPKI.shared.directory)
        defer { server.stop() }
        let audited = try Shell.run(
            [Shell.pinpath, "audit", "localhost:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file", store, "--json"]
                + options)
        let audit = try Self.verdict(json: try AuditCommandTests.object(audited.stdout), status: audited.status)
        let requested = try Shell.run(
            [Shell.pinpath, "request", "https://localhost:\(server.port)/", "--ca-file", store, "--timeout", "10"] + options)
        let agent = try Self.agentVerdict(port: server.port, store: store, pin: pin, profile: row.profile, maxDepth: row.maxDepth)

        #expect(audit == verify, "audit \(audited.stdout)")
        #expect(Self.kind(ofExit: requested.status) == verify.kind, "request exit \(requested.status): \(requested.stderr)")
        #expect(agent.kind == verify.kind, "agent \(agent)")
        if let message = verify.message {
            #expect(requested.stderr.contains(message), "request: \(requested.stderr)\nverify: \(message)")
            #expect(agent.message?.contains(message) == true, "agent: \(agent)\nverify: \(message)")
        }

        // The known answers, from the test PKI.
        let chain = try #require(object["chain"] as? [String: Any])
        if let result = row.result {
            #expect(object["result"] as? String == result, "\(verified.stdout)")
            #expect(chain["verify_error"] as? Int == row.verifyError)
            let rule = (object["failure"] as? [String: Any])?["rule"] as? [String: Any]
            #expect((rule?["name"] is String) == row.byRule, "\(verified.stdout)")
        } else {
            // A CN-only leaf from a trusted issuer: OpenSSL alone accepts it, so only a profile rule rejects it.
            let failure = object["failure"] as? [String: Any]
            #expect(object["result"] as? String == "trusted" || failure?["rule"] is [String: Any], "\(verified.stdout)")
        }
    }

    // MARK: - Helpers

    static func kind(ofExit status: Int32) -> String {
        switch status {
        case 0: "trusted"
        case 1: "pin_mismatch"
        case 2: "invalid"
        default: "exit \(status)"
        }
    }

    /// The verdict of `audit --json` or `verify --json`.
    static func verdict(json object: [String: Any], status: Int32) throws -> Verdict {
        let failure = object["failure"] as? [String: Any]
        let message = (failure?["message"] as? String)?.split(separator: "\n").first.map(String.init)
        #expect(object["exit_code"] as? Int == Int(status))
        return Verdict(kind: kind(ofExit: status), message: message)
    }

    /// `pinpath run --once` with one endpoint on the server, under an equivalent policy: the probe's verdict.
    static func agentVerdict(port: UInt16, store: String, pin: String?, profile: String?, maxDepth: Int?) throws -> Verdict {
        let directory = "\(LocalhostPKI.shared.directory)/agent-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var policy = pin.map { "mode: public_key, pins: [\"\($0)\"], require_backup_pin: false" } ?? "mode: none"
        if let profile { policy += ", profile: \(profile)" }
        if let maxDepth { policy += ", max_chain_depth: \(maxDepth)" }
        let configuration = """
            events: { output: stdout, probes: all }
            policies:
              chain: { \(policy), ca_file: \(store) }
            endpoints:
              - { name: served, url: "https://localhost:\(port)/", policy: chain, timeout: 10s }
            """
        try configuration.write(toFile: "\(directory)/pinpath.yaml", atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", "\(directory)/pinpath.yaml"])
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let probe = try #require(
            events.first { $0["event"] as? String == "probe.completed" }, "no probe.completed: \(result.stdout)\(result.stderr)")
        let kind: String
        switch (probe["outcome"] as? String, probe["error_category"] as? String) {
        case ("success", _): kind = "trusted"
        case (_, "policy_rejected"): kind = "pin_mismatch"
        case (_, "tls_invalid"), (_, "tls_expired"): kind = "invalid"
        case (let outcome, let category): kind = "\(outcome ?? "?") \(category ?? "?")"
        }
        // A pin failure's full account is pin.failure's alone; the probe's message points to it in one line.
        let pinFailure = events.first { $0["event"] as? String == "pin.failure" }
        return Verdict(kind: kind, message: (kind == "pin_mismatch" ? pinFailure?["message"] : probe["message"]) as? String)
    }
}
