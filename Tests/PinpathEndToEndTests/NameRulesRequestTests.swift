import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// The name rules end to end through the request core: `openssl s_server` on loopback serves a leaf that is
/// valid for 127.0.0.1 by OpenSSL's rules but breaks a name rule of the webpki profile, and both the library
/// (`Session`), `pinpath request` and the agent (`pinpath run --once`) refuse it in the handshake, naming the rule,
/// with no request sent (the
/// server echoes what it receives into a transcript, which must stay empty).
@Suite("Profile rules: names, through the request core", .serialized)
struct NameRulesRequestTests {
    static let pki = NamesPKI.shared

    /// One served leaf for 127.0.0.1 (under a CA with `caExtensions`) and the rule that must refuse it.
    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        var caExtensions: [String] = []
        var san: String
        var rule: String
        /// A rule of the webpki profile alone needs it forced: the anchor comes from a CA file, so `auto` would
        /// apply rfc5280.
        var profile = ProfileSelection.auto
        var testDescription: String { name }
    }

    static let attacks = [
        // A certificate that also speaks for every name registered under co.uk.
        Attack(
            name: "wildcard over a public suffix", san: "IP:127.0.0.1,DNS:*.co.uk", rule: "webpki.wildcard_public_suffix",
            profile: .webpki),
        // A constrained CA may not issue for admin.example.com; the wildcard would cover it.
        Attack(
            name: "wildcard into an excluded subtree", caExtensions: ["nameConstraints=critical,excluded;DNS:admin.example.com"],
            san: "IP:127.0.0.1,DNS:*.example.com", rule: "rfc5280.name_constraints_wildcards"),
    ]

    /// Root, CA and leaf for `attack`, files named after its index; the server echoes into a fresh transcript.
    static func serve(_ attack: Attack) throws -> (server: TLSServer, transcript: String, root: String) {
        let prefix = "request-\(attack.rule)"
        try pki.root("\(prefix)-root")
        try pki.intermediate("\(prefix)-ca", issuer: "\(prefix)-root", extensions: attack.caExtensions)
        try pki.leaf("\(prefix)-leaf", issuer: "\(prefix)-ca", subject: "/CN=127.0.0.1", extensions: ["subjectAltName=\(attack.san)"])
        let transcript = "\(pki.directory)/transcript-\(UUID().uuidString)"
        let server = try TLSServer(
            certificate: pki.path("\(prefix)-leaf"), key: pki.path("\(prefix)-leaf", "key"), chain: [pki.path("\(prefix)-ca")],
            in: pki.directory, www: false, transcript: transcript)
        return (server, transcript, pki.path("\(prefix)-root"))
    }

    static func requests(in transcript: String) -> String {
        let text = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
        return text.contains("GET ") || text.contains("HTTP/1.1") ? text : ""
    }

    @Test("Session: the handshake is refused as tls_invalid naming the rule, and no request is sent", arguments: attacks)
    func session(_ attack: Attack) async throws {
        let (server, transcript, root) = try Self.serve(attack)
        defer { server.stop() }
        var options = RequestOptions()
        options.timeout = TestTime.scaled(.seconds(5))
        options.freshConnection = true
        options.securityPolicy = try SecurityPolicy(mode: .none, profile: attack.profile)
        let request = SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(server.port)/")!)
        let session = try Session(Session.Configuration(trustStore: TrustStore(caFile: root)))
        do throws(HTTPError) {
            let response = try await session.send(request, options: options)
            Issue.record("\(attack.name): status \(response.statusCode)")
        } catch {
            #expect(error.code == .tlsInvalid, "\(error.message)")
            #expect(error.evaluation?.failure?.violation?.rule == attack.rule, "\(error.message)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test("pinpath request: exit 2 naming the rule, and no request is sent", arguments: attacks)
    func requestCommand(_ attack: Attack) throws {
        let (server, transcript, root) = try Self.serve(attack)
        defer { server.stop() }
        let result = try Shell.run([
            Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", root, "--timeout", "5",
            "--profile", attack.profile.description,
        ])
        #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("rule \(attack.rule)"), "\(result.stderr)")
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test("pinpath run --once: the probe fails as tls_invalid naming the rule, and no request is sent", arguments: attacks)
    func agent(_ attack: Attack) throws {
        let (server, transcript, root) = try Self.serve(attack)
        defer { server.stop() }
        let configuration = "\(Self.pki.directory)/agent-\(UUID().uuidString).yaml"
        try """
        events: { output: stdout, probes: all }
        policies:
          names: { mode: none, ca_file: \(root), profile: \(attack.profile) }
        endpoints:
          - { name: names, url: "https://127.0.0.1:\(server.port)/", policy: names, timeout: \(TestTime.yamlSeconds(5)) }

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", configuration])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let probe = result.stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "probe.completed" }
        #expect(probe?["error_category"] as? String == "tls_invalid", "\(result.stdout)")
        #expect((probe?["message"] as? String)?.contains("rule \(attack.rule)") == true, "\(result.stdout)")
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }
}
