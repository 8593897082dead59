import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// The certificate rules of issue 12 end to end: `openssl s_server` on loopback serves a chain OpenSSL alone
/// accepts but the webpki profile does not (a leaf without extended key usage, from a trusted CA), and every
/// user path refuses it in the handshake, naming the rule: the library (`Session`), `pinpath request` and
/// `pinpath run --once`; the `rfc5280` profile accepts it. The anchor comes from a CA file, which `auto` holds to
/// `rfc5280`, so `webpki` is forced on each path (ProfileByAnchorTests covers `auto`). And a trust store holding
/// only the intermediate anchors the genuine chain on every path (partial chains).
@Suite("Certificate rules end to end", .serialized)
struct CertificateRulesAttackTests {
    let pki = CertificateProfilePKI.shared
    static let rule = "webpki.leaf_eku_server_auth"

    /// `openssl s_server` serving `leaf` and the intermediate, echoing into a fresh transcript (`www` false) or
    /// answering with a status page.
    func server(_ leaf: String, www: Bool) throws -> (TLSServer, transcript: String) {
        let transcript = pki.file("transcript-\(UUID().uuidString)")
        let server = try TLSServer(
            certificate: pki.file("\(leaf).pem"), key: pki.file("\(leaf).key"), chain: [pki.file("inter.pem")],
            in: pki.directory, www: www, transcript: transcript)
        return (server, transcript)
    }

    static func requests(in transcript: String) -> String {
        let text = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
        return text.contains("GET ") || text.contains("HTTP/1.1") ? text : ""
    }

    /// A session for 127.0.0.1 under mode none with `profile`, trusting `anchor` alone.
    func session(profile: VerificationProfile, anchor: String) throws -> Session {
        let store = try TrustStore(certificates: try Certificate.certificates(contentsOf: pki.file("\(anchor).pem")))
        var configuration = Session.Configuration(trustStore: store)
        configuration.policies = HostPolicySet([
            HostPolicy(
                patterns: [try HostPattern(parsing: "127.0.0.1")],
                policy: try SecurityPolicy(mode: .none, profile: ProfileSelection(profile)))
        ])
        return try Session(configuration)
    }

    static func get(_ port: UInt16) -> (SessionRequest, RequestOptions) {
        var options = RequestOptions()
        options.timeout = TestTime.scaled(.seconds(5))
        options.freshConnection = true
        return (SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(port)/")!), options)
    }

    @Test("Session: a leaf without extended key usage is tls_invalid naming the rule, and no request is sent; rfc5280 accepts it")
    func session() async throws {
        let (server, transcript) = try server("e2e-no-eku", www: false)
        defer { server.stop() }
        let strict = try session(profile: .webpki, anchor: "root")
        let (request, options) = Self.get(server.port)
        do throws(HTTPError) {
            let response = try await strict.send(request, options: options)
            Issue.record("webpki: status \(response.statusCode)")
        } catch {
            #expect(error.code == .tlsInvalid, "\(error.message)")
            #expect(error.evaluation?.failure?.violation?.rule == Self.rule, "\(error.message)")
            #expect(error.message.contains("rule \(Self.rule) at depth 0"), "\(error.message)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")

        let (lenient, _) = try self.server("e2e-no-eku", www: true)
        defer { lenient.stop() }
        let (lenientRequest, lenientOptions) = Self.get(lenient.port)
        let response = try await session(profile: .rfc5280, anchor: "root").send(lenientRequest, options: lenientOptions)
        #expect(response.statusCode == 200)
    }

    @Test(
        """
        Session: a CA certificate served as the leaf (key usage keyCertSign only) passes the handshake under rfc5280; webpki \
        refuses it naming webpki.leaf_not_ca, and no request is sent
        """
    )
    func sessionCertificateAuthorityLeaf() async throws {
        let (lenient, _) = try server("e2e-ca-leaf", www: true)
        defer { lenient.stop() }
        let (request, options) = Self.get(lenient.port)
        let response = try await session(profile: .rfc5280, anchor: "root").send(request, options: options)
        #expect(response.statusCode == 200)

        let (server, transcript) = try server("e2e-ca-leaf", www: false)
        defer { server.stop() }
        let (strictRequest, strictOptions) = Self.get(server.port)
        let strict = try session(profile: .webpki, anchor: "root")
        do throws(HTTPError) {
            let response = try await strict.send(strictRequest, options: strictOptions)
            Issue.record("webpki: status \(response.statusCode)")
        } catch {
            #expect(error.code == .tlsInvalid, "\(error.message)")
            #expect(error.evaluation?.failure?.violation?.rule == "webpki.leaf_not_ca", "\(error.message)")
            #expect(error.message.contains("(a Baseline Requirements rule, not in rfc5280)"), "\(error.message)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test("Session: a trust store holding only the intermediate anchors the chain")
    func sessionIntermediateAnchor() async throws {
        let (server, _) = try server("e2e-valid", www: true)
        defer { server.stop() }
        let (request, options) = Self.get(server.port)
        let response = try await session(profile: .webpki, anchor: "inter").send(request, options: options)
        #expect(response.statusCode == 200)
    }

    @Test("pinpath request --ca-file: the rule's refusal exits 2 naming it, no request is sent; a trusted intermediate alone anchors")
    func requestCommand() throws {
        let (server, transcript) = try server("e2e-no-eku", www: false)
        defer { server.stop() }
        let refused = try Shell.run([
            Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", pki.file("root.pem"), "--timeout", "5",
            "--profile", "webpki",
        ])
        #expect(refused.status == 2, "exit \(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("rule \(Self.rule) at depth 0"), "\(refused.stderr)")
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")

        let (genuine, _) = try self.server("e2e-valid", www: true)
        defer { genuine.stop() }
        let accepted = try Shell.run([
            Shell.pinpath, "request", "https://127.0.0.1:\(genuine.port)/", "--ca-file", pki.file("inter.pem"), "--timeout", "5",
        ])
        #expect(accepted.status == 0, "exit \(accepted.status): \(accepted.stderr)")
    }

    /// `pinpath run --once` with one endpoint on `port` under a mode-none webpki policy trusting `anchor`: the exit
    /// status and the endpoint's `probe.completed` event.
    func runOnce(port: UInt16, anchor: String) throws -> (status: Int32, probe: [String: Any]?, output: String) {
        let file = pki.file("agent-\(UUID().uuidString).yaml")
        try """
        events: { output: stdout, probes: all }
        policies:
          store:
            mode: none
            ca_file: \(pki.file("\(anchor).pem"))
            profile: webpki
        endpoints:
          - { name: target, url: "https://127.0.0.1:\(port)/", policy: store, timeout: \(TestTime.yamlSeconds(5)) }

        """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", file])
        let probe = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "probe.completed" }
        return (result.status, probe, result.stdout + result.stderr)
    }

    @Test(
        "pinpath run --once: the rule's refusal is a tls_invalid probe naming it, no request is sent; a trusted intermediate alone anchors")
    func agent() throws {
        let (server, transcript) = try server("e2e-no-eku", www: false)
        defer { server.stop() }
        let refused = try runOnce(port: server.port, anchor: "root")
        #expect(refused.status == 1, "\(refused.output)")
        let probe = try #require(refused.probe, "no probe.completed: \(refused.output)")
        #expect(probe["error_category"] as? String == "tls_invalid", "\(probe)")
        #expect((probe["message"] as? String)?.contains("rule \(Self.rule) at depth 0") == true, "\(probe)")
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")

        let (genuine, _) = try self.server("e2e-valid", www: true)
        defer { genuine.stop() }
        let accepted = try runOnce(port: genuine.port, anchor: "inter")
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.probe?["outcome"] as? String == "success", "\(accepted.output)")
    }
}
