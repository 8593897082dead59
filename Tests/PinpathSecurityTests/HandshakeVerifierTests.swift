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

        let (connected, verifyResult, marked) = try Self.connect(port: server.port, verifier: verifier)
        #expect(connected == row.connects)
        // The connection is marked as accepted by this verifier exactly when its handshake was let through.
        #expect(marked == row.connects)
        let evaluation = try #require(try verifier.lastResult?.get())
        #expect(evaluation.failure?.reason.description == row.reason)
        #expect(evaluation.servedChain.map(\.subject) == (try pki.chain([row.leaf] + row.chain)).map(\.subject))
        if !row.connects {
            #expect(verifyResult == Int(X509_V_ERR_APPLICATION_VERIFICATION))
        }
    }

    /// Connects with an OpenSSL client whose only certificate check is the verifier; returns whether the
    /// handshake completed, `SSL_get_verify_result`, and whether ``HandshakeVerifier/accepted(_:)`` names the
    /// verifier for this connection. Another connection of the same context that made no handshake is never
    /// marked: the verifier being installed on the context is not what the mark says.
    static func connect(port: UInt16, verifier: HandshakeVerifier) throws -> (connected: Bool, verifyResult: Int, marked: Bool) {
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
        let idle = try #require(SSL_new(context))
        defer { SSL_free(idle) }
        #expect(HandshakeVerifier.accepted(idle) == nil, "a connection without a handshake is not marked")
        return (connected, SSL_get_verify_result(ssl), HandshakeVerifier.accepted(ssl) === verifier)
    }
}
