import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// Audits share their TLS context (issue 30 item 1, "`audit` uses it too"): a batch's connections are made from one
/// context per client certificate, which verifies nothing in the handshake (the audit judges the chain after it)
/// and which a check's handshake refuses.
@Suite("Audit connections on shared TLS contexts", .serialized)
struct AuditContextTests {
    let pki = TestPKI.shared

    @Test("A batch of 6 audits, half with a client certificate, builds 2 contexts; each audit still sees its own chain")
    func batchBuildsOneContextPerClientCertificate() async throws {
        let clients = ClientCertificatePKI.shared
        // Asks every client for a certificate (-verify: optional), so the audits with one send it.
        let server = try TLSServer(
            certificate: pki.path("valid"), key: pki.path("valid", "key"), chain: [pki.path("inter")], in: pki.directory,
            extraArguments: ["-verify", "1", "-CAfile", clients.path("client-ca")])
        defer { server.stop() }
        let endpoints = (0..<6).map { _ in TLSEndpoint(host: "valid.test", port: Int(server.port)) }
        var plain = TLSAudit.Options(
            policy: try SecurityPolicy(mode: .none), trustStore: try pki.trustStore(),
            connectTo: TLSEndpoint(host: "127.0.0.1", port: Int(server.port)))
        plain.timeout = .seconds(10)
        var withClient = plain
        withClient.clientCertificate = (clients.path("client"), clients.path("client", "key"))
        var index = 0
        let batch = TLSAuditBatch(endpoints, concurrency: 3) { _ in
            defer { index += 1 }
            return index.isMultiple(of: 2) ? plain : withClient
        }
        var audits: [TLSAudit] = []
        await batch.run { audits.append($0) }
        #expect(batch.contextsBuilt == 2)
        #expect(audits.count == 6)
        for (position, audit) in audits.enumerated() {
            #expect(audit.connectionError == nil, "\(audit.connectionError?.message ?? "")")
            #expect(audit.outcome == .trusted)
            #expect(audit.servedChain.map(\.subject) == ["CN=valid.test", "CN=Pinpath Test Intermediate"])
            #expect(audit.clientCertificateRequest?.certificateSent == !position.isMultiple(of: 2))
        }
    }

    @Test("An audit context still sees an untrusted chain (verify none) and judges it after the handshake")
    func auditContextSeesInvalidChain() async throws {
        let server = try TLSServer(
            certificate: pki.path("valid"), key: pki.path("valid", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { server.stop() }
        // Anchors that do not include the test root: the handshake must complete anyway.
        let options = TLSAudit.Options(
            policy: try SecurityPolicy(mode: .none), trustStore: try TrustStore(certificates: []),
            connectTo: TLSEndpoint(host: "127.0.0.1", port: Int(server.port)))
        let batch = TLSAuditBatch(Array(repeating: TLSEndpoint(host: "valid.test", port: Int(server.port)), count: 3)) { _ in options }
        var outcomes: [TLSAudit.Outcome] = []
        await batch.run { outcomes.append($0.outcome) }
        #expect(outcomes == [.chainInvalid, .chainInvalid, .chainInvalid])
        #expect(batch.contextsBuilt == 1)
    }

    @Test("A check's handshake refuses an audit's context: nothing would judge the chain in the handshake")
    func checkRefusesAuditContext() throws {
        let context = try TLSClientContexts().context(for: TLSClientTerms(purpose: .audit))
        let verifier = HandshakeVerifier(
            policy: try SecurityPolicy(mode: .none), host: "valid.test", port: 443, trustStore: try pki.trustStore())
        #expect {
            _ = try TLSClientHandshake(context: context, socket: -1, serverName: "valid.test", verifier: verifier)
        } throws: { error in
            (error as? SecurityError)?.code == .invalidInput && "\(error)".contains("audit")
        }
    }
}
