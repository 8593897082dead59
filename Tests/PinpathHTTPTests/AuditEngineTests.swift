import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Audits on a handshake engine instead of a thread of the blocking pool per audit: `pinpath audit`'s own
/// (``AuditEngine``). A batch runs on the engine's one thread, in
/// order, each endpoint with its own outcome and timeout; a hostile server ends its audit with the same error as
/// on the pool, where audits of library users without either still run. Real servers on loopback: `openssl
/// s_server` and the hostile kit.
@Suite("Audits on the handshake engine", .serialized)
struct AuditEngineTests {
    let pki = TestPKI.shared

    func options(timeout: Duration = .seconds(10)) throws -> TLSAudit.Options {
        try TLSAudit.Options(policy: SecurityPolicy.oneOff(), trustStore: pki.trustStore(), timeout: timeout)
    }

    /// The audits of `endpoints` by one batch whose connections `connector` makes, in the order delivered.
    static func audits(_ endpoints: [TLSEndpoint], options: TLSAudit.Options, connector: TLSAuditConnector) async -> [TLSAudit] {
        var batch = TLSAuditBatch(endpoints) { _ in options }
        batch.connector = connector
        var audits: [TLSAudit] = []
        await batch.run { audits.append($0) }
        return audits
    }

    @Test("200 audits on pinpath audit's engine: one thread, results in order, each endpoint's own outcome and timeout")
    func batchOnOneThread() async throws {
        // Several servers: s_server handles one connection at a time.
        let servers = try (0..<4).map { _ in
            try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        }
        defer { for server in servers { server.stop() } }
        let refused = try HostileServer(.refuse)
        defer { refused.stop() }
        let silent = try HostileServer(.silent)  // accepts, reads the ClientHello, never answers
        defer { silent.stop() }
        enum Kind { case server, refused, silent }
        let kinds: [Kind] = (0..<200).map { $0 % 50 == 7 ? .refused : $0 == 100 ? .silent : .server }
        let endpoints = kinds.enumerated().map { index, kind in
            switch kind {
            case .server: TLSEndpoint(host: "127.0.0.1", port: Int(servers[index % servers.count].port))
            case .refused: TLSEndpoint(host: "127.0.0.1", port: Int(refused.port))
            case .silent: TLSEndpoint(host: "127.0.0.1", port: Int(silent.port))
            }
        }
        let engine = AuditEngine()
        defer { engine.shutdown() }
        let started = ContinuousClock.now
        let audits = await Self.audits(endpoints, options: try options(timeout: .seconds(2)), connector: engine.connector)
        let elapsed = ContinuousClock.now - started
        #expect(audits.map(\.endpoint) == endpoints)
        for (audit, kind) in zip(audits, kinds) {
            let endpoint = audit.endpoint
            switch kind {
            case .server:
                #expect(audit.outcome == .trusted && audit.servedChain.count == 2, "\(endpoint): \(audit.outcome)")
                #expect(audit.address == "\(endpoint)" && audit.protocolVersion == "TLSv1.3")
            case .refused:
                #expect(audit.connectionError?.code == .connectionRefused)
                #expect(audit.connectionError?.message == "\(endpoint): connection refused by \(endpoint) (nothing listening?)")
            case .silent:
                // Its own 2 s, then timed out; the other 199 went on meanwhile.
                #expect(audit.connectionError?.code == .timedOut && audit.address == "\(endpoint)")
                #expect(audit.connectionError?.message.contains("no TLS handshake within the timeout") == true)
            }
        }
        #expect(engine.threadsStarted == 1, "the engine started \(engine.threadsStarted) threads")
        // Not a benchmark: a bound far above the run's time, that a batch waiting on the silent server per audit
        // (or hanging) would pass.
        #expect(elapsed < .seconds(90), "the batch took \(elapsed)")
    }

    /// A hostile server's behaviour, and what an audit of it ends with.
    struct Hostile: Sendable, CustomTestStringConvertible {
        let name: String
        let behaviour: HostileServer.Behaviour
        let code: TLSConnectionError.Code?
        /// The message after `127.0.0.1:PORT: `.
        let message: String?
        var testDescription: String { name }
    }

    static let hostile = [
        // Bytes that are not TLS ("HTTP/1.1 200 OK" and header lines every 50 ms, forever).
        Hostile(
            name: "garbage instead of a ServerHello", behaviour: .slowloris, code: .handshakeFailed,
            message: "TLS handshake failed: wrong version number (the server does not speak TLS on this port)"),
        Hostile(
            name: "fatal alert", behaviour: .tlsAlert, code: .handshakeFailed,
            message: "TLS handshake failed: sslv3 alert handshake failure"),
        Hostile(
            name: "status line", behaviour: .malformedStatusLine("HTTP/1.1 two hundred OK"), code: .handshakeFailed,
            message: "TLS handshake failed: wrong version number (the server does not speak TLS on this port)"),
        Hostile(
            name: "never answers the ClientHello", behaviour: .silent, code: .timedOut,
            message: "no TLS handshake within the timeout (the server sent no TLS answer; is it a TLS port?)"),
        Hostile(name: "refused", behaviour: .refuse, code: .connectionRefused, message: nil),
        // A valid handshake, one byte every 50 ms: it cannot end within the second, and holds nothing but its socket.
        Hostile(
            name: "slowloris handshake",
            behaviour: .trickledTLS(
                HostileServer.TLSIdentity(
                    certificate: TestPKI.shared.path("ip"), key: TestPKI.shared.path("ip", "key"), chain: [TestPKI.shared.path("inter")])),
            code: .timedOut, message: "no TLS handshake within the timeout (the server sent no TLS answer; is it a TLS port?)"),
    ]

    @Test(
        "Attack: a hostile server ends an audit on the engine with the error it gets on the pool; the engine goes on", arguments: hostile)
    func hostileServers(_ hostile: Hostile) async throws {
        let attacker = try HostileServer(hostile.behaviour, directory: pki.directory)
        defer { attacker.stop() }
        let engine = AuditEngine()
        defer { engine.shutdown() }
        let endpoint = TLSEndpoint(host: "127.0.0.1", port: Int(attacker.port))
        let options = try options(timeout: .seconds(1))
        let started = ContinuousClock.now
        let onEngine = try #require(await Self.audits([endpoint], options: options, connector: engine.connector).first)
        #expect(ContinuousClock.now - started < .seconds(5))
        let onPool = try #require(await Self.audits([endpoint], options: options, connector: .blockingPool).first)
        let error = try #require(onEngine.connectionError)
        #expect(error == onPool.connectionError)
        #expect(onEngine.address == onPool.address)
        #expect(error.code == hostile.code)
        if let message = hostile.message { #expect(error.message == "\(endpoint): \(message)") }
        // The engine is not stuck on the attacker: the next audit on it gets its handshake.
        let good = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { good.stop() }
        let next = await Self.audits(
            [TLSEndpoint(host: "127.0.0.1", port: Int(good.port))], options: try self.options(), connector: engine.connector)
        #expect(next.first?.outcome == .trusted)
    }

    @Test("Attack: a Certificate message of 50 certificates: the audit on the engine shows all 50 as sent, as on the pool")
    func hugeChain() async throws {
        let identity = HostileServer.TLSIdentity(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")])
        let padded = try HostileServer(
            .manyCertificates(identity, filler: HostileServer.fillerCertificates(count: 48, in: pki.directory)), directory: pki.directory)
        defer { padded.stop() }
        let engine = AuditEngine()
        defer { engine.shutdown() }
        let endpoint = TLSEndpoint(host: "127.0.0.1", port: Int(padded.port))
        let onEngine = try #require(await Self.audits([endpoint], options: try options(), connector: engine.connector).first)
        let onPool = try #require(await Self.audits([endpoint], options: try options(), connector: .blockingPool).first)
        #expect(onEngine.connectionError == nil && onEngine.servedChain.count == 50)
        #expect(onEngine.servedChain == onPool.servedChain && onEngine.outcome == onPool.outcome)
    }

    @Test("An audit's handshake takes only an audit's context, a check's only a check's (the I85 rule)")
    func contextsByPurpose() throws {
        let check = try TLSClientContext(terms: TLSClientTerms(purpose: .check))
        let audit = try TLSClientContext(terms: TLSClientTerms(purpose: .audit))
        let verifier = HandshakeVerifier(policy: try SecurityPolicy(mode: .none), host: "valid.test", trustStore: try pki.trustStore())
        #expect(throws: SecurityError.self) {
            try TLSClientHandshake(auditing: check, socket: -1, serverName: "valid.test", label: "valid.test:443")
        }
        #expect(throws: SecurityError.self) {
            try TLSClientHandshake(context: audit, socket: -1, serverName: "valid.test", verifier: verifier)
        }
        let handshake = try TLSClientHandshake(auditing: audit, socket: -1, serverName: "valid.test", label: "valid.test:443")
        #expect(handshake.verifier == nil)
    }
}
