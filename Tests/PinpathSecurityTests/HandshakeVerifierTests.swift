import COpenSSL
import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// The verifier inside a real handshake: an in-process OpenSSL client against `openssl s_server` on loopback.
@Suite("Handshake verification", .serialized)
struct HandshakeVerifierTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        var chain: [String]
        var pinned: [String]
        var enforce = true
        var connects: Bool
        var reason: String?
        var testDescription: String { name }
    }

    @Test(
        "The policy decides the handshake; the detailed result reaches the caller",
        arguments: [
            Case(name: "pinned intermediate", leaf: "valid", chain: ["inter"], pinned: ["inter"], connects: true),
            Case(name: "pinned root from the store", leaf: "valid", chain: ["inter"], pinned: ["root"], connects: true),
            Case(name: "unrelated pin", leaf: "valid", chain: ["inter"], pinned: ["otherroot"], connects: false, reason: "pin_mismatch"),
            Case(
                name: "unrelated pin, report-only", leaf: "valid", chain: ["inter"], pinned: ["otherroot"], enforce: false, connects: true,
                reason: "pin_mismatch"),
            Case(
                name: "rogue leaf with the pinned intermediate appended", leaf: "rogue", chain: ["otherinter", "inter"], pinned: ["inter"],
                connects: false, reason: "pin_mismatch"),
            Case(
                name: "expired leaf, pinned", leaf: "expired", chain: ["inter"], pinned: ["inter"], connects: false, reason: "chain_invalid"
            ),
        ])
    func handshake(_ row: Case) throws {
        let pki = TestPKI.shared
        let server = try TLSServer(
            certificate: pki.path(row.leaf), key: pki.path(row.leaf, "key"), chain: row.chain.map { pki.path($0) }, in: pki.directory)
        defer { server.stop() }
        let policy = try SecurityPolicy(
            mode: .publicKey, pins: try pki.chain(row.pinned).map(\.spkiPin), enforce: row.enforce, requiresBackupPin: false)
        let verifier = HandshakeVerifier(policy: policy, host: "valid.test", port: Int(server.port), trustStore: try pki.trustStore())

        let (connected, verifyResult) = try Self.connect(port: server.port, verifier: verifier)
        #expect(connected == row.connects)
        let evaluation = try #require(try verifier.lastResult?.get())
        #expect(evaluation.failure?.reason.description == row.reason)
        #expect(evaluation.servedChain.map(\.subject) == (try pki.chain([row.leaf] + row.chain)).map(\.subject))
        if !row.connects {
            #expect(verifyResult == Int(X509_V_ERR_APPLICATION_VERIFICATION))
        }
    }

    /// Connects with an OpenSSL client whose only certificate check is the verifier; returns whether the
    /// handshake completed and `SSL_get_verify_result`.
    static func connect(port: UInt16, verifier: HandshakeVerifier) throws -> (Bool, Int) {
        let context = try #require(SSL_CTX_new(TLS_client_method()))
        defer { SSL_CTX_free(context) }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        try verifier.install(on: context)
        let ssl = try #require(SSL_new(context))
        defer { SSL_free(ssl) }
        let fd = try TLSServer.connectLoopback(port: port)
        defer { close(fd) }
        #expect(SSL_set_fd(ssl, fd) == 1)
        let connected = SSL_connect(ssl) == 1
        ERR_clear_error()
        return (connected, SSL_get_verify_result(ssl))
    }
}
