import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Issue 11, rules 3 and 4: a pooled connection outlives the request that opened it. The verifier that
/// checked it must live as long as it (a renegotiation would call it again), and it may carry only requests
/// made under the policy and trust store it was verified under.
@Suite("Connection reuse under attack", .serialized)
struct ConnectionReuseAttackTests {
    let pki = TestPKI.shared

    // MARK: Rule 3: the verifier lives as long as its connection; renegotiation is refused

    /// A TLS 1.2 server for the `ip` leaf (SAN IP:127.0.0.1) that the test drives by hand. Its renegotiations
    /// are full handshakes (`-no_resumption_on_reneg`): a resumed one sends no certificate, so the client's
    /// verify callback would not run, and a verifier freed too early would go unnoticed.
    func renegotiatingServer() throws -> ScriptedTLSServer {
        try ScriptedTLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
            extraArguments: ["-tls1_2", "-no_resumption_on_reneg"])
    }

    /// The attack: `/start` is answered with a redirect on a kept-alive connection; once the redirected
    /// request has arrived on that same connection, the server starts a renegotiation (a HelloRequest).
    ///
    /// The client refuses (a `no_renegotiation` warning alert), which OpenSSL's server answers with a fatal
    /// `handshake_failure` alert. libcurl then sends the request again on a fresh connection, as it does when a
    /// reused connection dies before any response byte: that connection is verified from scratch. The server
    /// then renegotiates again (`renegotiateAgain`), or answers 200.
    func redirectThenRenegotiate(_ server: ScriptedTLSServer, renegotiateAgain: Bool) async throws {
        try #require(await server.wait(for: "GET /start"), "the first request arrives: \(server.transcript)")
        server.send("HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n")
        try #require(await server.wait(for: "GET /next"), "the redirected request arrives: \(server.transcript)")
        #expect(!server.transcript.contains("CONNECTION CLOSED"), "the redirect reused the first connection")
        server.renegotiate()
        try #require(await server.wait(for: "no renegotiation"), "the client refused the renegotiation: \(server.transcript)")
        try #require(await server.wait(for: "GET /next", count: 2), "the request is sent again on a new connection: \(server.transcript)")
        if renegotiateAgain {
            server.renegotiate()
            try #require(await server.wait(for: "no renegotiation", count: 2), "refused again: \(server.transcript)")
        } else {
            server.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        }
    }

    /// What the client sees when the fresh connection is renegotiated too: the server's fatal alert, as a TLS
    /// failure.
    func expectRefusal(_ error: (any Error)?) {
        let error = error as? HTTPError
        #expect(error?.code == .tlsFailed, "a renegotiation attempt ends the request: \(String(describing: error))")
        #expect(error?.message.contains("alert handshake failure") == true, "\(error?.message ?? "no error")")
    }

    @Test(
        """
        Session: a renegotiation after a redirect on a kept-alive connection is refused, nothing crashes, and only a freshly \
        verified connection may answer
        """,
        arguments: [true, false])
    func renegotiationThroughSession(renegotiateAgain: Bool) async throws {
        let server = try renegotiatingServer()
        defer { server.stop() }
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        defer { session.shutdown() }
        var options = RequestOptions()
        options.timeout = .seconds(20)
        let request = SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(server.port)/start")!)
        let response = Task { try await session.send(request, options: options) }
        try await redirectThenRenegotiate(server, renegotiateAgain: renegotiateAgain)
        let result = await response.result
        if renegotiateAgain {
            #expect(throws: (any Error).self, "no response from a connection that renegotiates") { try result.get() }
            if case .failure(let error) = result { expectRefusal(error) }
        } else {
            let response = try result.get()
            #expect(response.statusCode == 200 && response.redirectCount == 1)
            #expect(response.tls?.evaluation?.allowsConnection == true, "the fresh connection's own evaluation")
        }
    }

    @Test("pinpath request: a renegotiation after a followed redirect is refused, and the process exits normally")
    func renegotiationThroughCLI() async throws {
        let server = try renegotiatingServer()
        defer { server.stop() }
        let stdout = "\(pki.directory)/request-out-\(UUID().uuidString)"
        let stderr = "\(pki.directory)/request-err-\(UUID().uuidString)"
        let out = open(stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let err = open(stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let pid = try Shell.spawn(
            [Shell.pinpath, "request", "--ca-file", pki.path("store"), "--timeout", "20", "https://127.0.0.1:\(server.port)/start"],
            stdout: out, stderr: err)
        close(out)
        close(err)
        var exited = false
        defer { if !exited { Shell.kill(pid) } }
        try await redirectThenRenegotiate(server, renegotiateAgain: true)
        let status = try await Shell.stop(pid, signal: 0, timeout: .seconds(20))  // signal 0: only waits
        exited = true
        let message = (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? ""
        // 3 is `request`'s exit code for a failure that is neither pins, chain nor reachability (tls_failed);
        // a crash would be 128 + the signal.
        #expect(status == 3, "pinpath request exited \(String(describing: status)): \(message)")
        #expect(message.contains("alert handshake failure"), "\(message)")
        #expect((try? String(contentsOfFile: stdout, encoding: .utf8)) == "", "no body is printed")
    }

    @Test(
        """
        Transport: the redirected request reuses the verified connection; the refused renegotiation closes it and releases its \
        verifier; the retry is verified afresh
        """
    )
    func renegotiationThroughTransport() async throws {
        let server = try renegotiatingServer()
        defer { server.stop() }
        let engine = try TransferEngine()
        defer { engine.stop() }
        let store = try pki.trustStore()
        let policy = try SecurityPolicy(mode: .none)
        weak var opener: HandshakeVerifier?
        let follower = HandshakeVerifier(policy: policy, host: "127.0.0.1", port: Int(server.port), trustStore: store)
        let attack = Task { try await redirectThenRenegotiate(server, renegotiateAgain: false) }
        do {
            let verifier = HandshakeVerifier(policy: policy, host: "127.0.0.1", port: Int(server.port), trustStore: store)
            opener = verifier
            let redirect = try await Self.perform(engine, url: "https://127.0.0.1:\(server.port)/start", verifier: verifier)
            #expect(redirect.statusCode == 302)
            #expect(verifier.handshakesEvaluated == 1)
        }
        // The transfer that opened the connection is gone; the pooled connection keeps its verifier.
        #expect(opener != nil, "the connection holds the verifier that checked it")
        let result = await Self.outcome { () async throws(HTTPError) in
            try await Self.perform(engine, url: "https://127.0.0.1:\(server.port)/next", verifier: follower)
        }
        try await attack.value
        // The refusal killed the first connection: its TLS context was freed, and the verifier with it, before
        // any second handshake could call it.
        #expect(opener == nil, "the verifier is released with its connection")
        // libcurl's retry opened a new connection, which this request's own verifier checked, once.
        #expect(follower.handshakesEvaluated == 1)
        let response = try result.get()
        #expect(response.statusCode == 200)
        #expect(response.tls?.evaluation?.date == (try follower.lastResult?.get())?.date, "the evaluation of the connection used")
    }

    @Test("A pooled connection keeps its verifier alive until the session closes it")
    func verifierLivesWithItsConnection() async throws {
        let server = try keepAliveServer()
        defer { server.stop() }
        let engine = try TransferEngine()
        defer { engine.stop() }
        weak var released: HandshakeVerifier?
        do {
            let verifier = HandshakeVerifier(
                policy: try SecurityPolicy(mode: .none), host: "127.0.0.1", port: Int(server.port), trustStore: try pki.trustStore())
            released = verifier
            let response = try await Self.perform(engine, url: "https://127.0.0.1:\(server.port)/", verifier: verifier)
            #expect(response.statusCode == 200)
        }
        #expect(released != nil, "the idle pooled connection holds the verifier that checked it")
        #expect(released?.handshakesEvaluated == 1)
        engine.stop()  // what Session.shutdown does: closes the pooled connections
        #expect(released == nil, "closing the connection released the verifier")
        #expect(server.connections.count == 1)
    }

    // MARK: Rule 4: a pooled connection never carries a request past its own policy

    /// How a request is made: under the session's policy and store, or with its own pin or trust store.
    enum Terms: Sendable, CustomStringConvertible {
        case session
        case pin(String)
        case store(String)

        var description: String {
            switch self {
            case .session: return "the session's terms"
            case .pin(let name): return "a pin on \(name)"
            case .store(let name): return "a per-request store of \(name)"
            }
        }
    }

    struct ReuseCase: Sendable, CustomTestStringConvertible {
        var name: String
        /// The session's trust store (a file of the test PKI).
        var sessionStore = "store"
        var first: Terms
        var second: Terms
        /// The second request's failure, or `nil` for 200.
        var secondFailure: HTTPError.Code?
        /// What the server saw per connection: the request paths that arrived on it (`nil`: the client
        /// refused its handshake).
        var connections: [[String]?]
        var testDescription: String { name }
    }

    static let reuseCases: [ReuseCase] = [
        ReuseCase(
            name: "unpinned, then a pin that does not match: refused on a new connection, nothing sent",
            first: .session, second: .pin("otherroot"), secondFailure: .policyRejected, connections: [["/first"], nil]),
        ReuseCase(
            name: "a matching pin, then a pin that does not match: refused on a new connection, nothing sent",
            first: .pin("inter"), second: .pin("otherroot"), secondFailure: .policyRejected, connections: [["/first"], nil]),
        ReuseCase(
            name: "a matching pin, then unpinned: a new connection, verified again",
            first: .pin("inter"), second: .session, connections: [["/first"], ["/second"]]),
        ReuseCase(
            name: "unpinned, then a matching pin: a new connection, verified under the pin",
            first: .session, second: .pin("inter"), connections: [["/first"], ["/second"]]),
        ReuseCase(
            name: "the session's store, then a per-request store that does not anchor the chain: refused, nothing sent",
            first: .session, second: .store("otherroot"), secondFailure: .tlsInvalid, connections: [["/first"], nil]),
        ReuseCase(
            name: "a per-request store that anchors the chain, then the session's that does not: refused, nothing sent",
            sessionStore: "otherroot", first: .store("root"), second: .session, secondFailure: .tlsInvalid, connections: [["/first"], nil]),
        ReuseCase(
            name: "equal pins, made separately, share one connection",
            first: .pin("inter"), second: .pin("inter"), connections: [["/first", "/second"]]),
        ReuseCase(
            name: "the session's terms twice share one connection",
            first: .session, second: .session, connections: [["/first", "/second"]]),
        ReuseCase(
            name: "per-request stores loaded twice from one file share one connection",
            sessionStore: "otherroot", first: .store("root"), second: .store("root"), connections: [["/first", "/second"]]),
    ]

    @Test("One session, two requests to one URL under different terms: each connection carries only its own terms", arguments: reuseCases)
    func reuseFollowsTerms(_ row: ReuseCase) async throws {
        let server = try keepAliveServer()
        defer { server.stop() }
        let session = try Session(Session.Configuration(trustStore: try TrustStore(caFile: pki.path(row.sessionStore))))
        defer { session.shutdown() }
        let url = "https://127.0.0.1:\(server.port)"

        let first = try await session.send(SessionRequest(method: .get, url: URL(string: "\(url)/first")!), options: try options(row.first))
        #expect(first.statusCode == 200)
        let secondOptions = try options(row.second)
        let second = await Self.outcome { () async throws(HTTPError) in
            try await session.send(SessionRequest(method: .get, url: URL(string: "\(url)/second")!), options: secondOptions)
        }
        switch (second, row.secondFailure) {
        case (.success(let response), nil):
            #expect(response.statusCode == 200)
            // The evaluation reported is the one of the connection used, whether it was reused or new.
            let evaluation = try #require(response.tls?.evaluation, "a response over TLS carries its connection's evaluation")
            #expect(evaluation.allowsConnection && !evaluation.verifiedChain.isEmpty)
            if row.connections.count == 1 {
                #expect(evaluation.date == first.tls?.evaluation?.date, "the reused connection's own evaluation")
            }
        case (.failure(let error), let expected?):
            #expect(error.code == expected, "\(error)")
            #expect(error.evaluation?.allowsConnection == false, "the refusal carries the evaluation that made it")
        default:
            Issue.record("second request: expected \(row.secondFailure.map { "\($0)" } ?? "200"), got \(second)")
        }

        // The server's side: which requests arrived on which connection, and no byte on a refused one.
        let seen = await settledConnections(server, count: row.connections.count)
        #expect(seen.map { $0.handshaken ? $0.requests.map(Self.path) : nil } == row.connections, "\(seen)")
        for connection in seen where !connection.handshaken {
            #expect(connection.handshakeFailed && connection.bytesReceived == 0, "nothing reached the refused server: \(connection)")
        }
    }

    @Test("pinpath request: a redirect to the same host under the same pin reuses the verified connection")
    func redirectReusesThroughCLI() async throws {
        let server = try keepAliveServer(redirecting: true)
        defer { server.stop() }
        let pin = try pki.certificate("inter").spkiPin.description
        let result = try Shell.run([
            Shell.pinpath, "request", "--ca-file", pki.path("store"), "--pin", pin, "--json", "https://127.0.0.1:\(server.port)/start",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let seen = await settledConnections(server, count: 1)
        #expect(seen.map(\.requests).map { $0.map(Self.path) } == [["/start", "/next"]], "\(seen)")
    }

    // MARK: Helpers

    func keepAliveServer(redirecting: Bool = false) throws -> KeepAliveTLSServer {
        try KeepAliveTLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
            redirectingStart: redirecting)
    }

    func options(_ terms: Terms) throws -> RequestOptions {
        var options = RequestOptions()
        options.timeout = .seconds(10)
        switch terms {
        case .session: break
        case .pin(let name):
            options.securityPolicy = try SecurityPolicy(
                mode: .publicKey, pins: [try pki.certificate(name).spkiPin], requiresBackupPin: false)
        case .store(let name):
            options.trustStore = try TrustStore(caFile: pki.path(name))
        }
        return options
    }

    /// The server's connections once `count` have been accepted and each has either failed its handshake or
    /// served a request (the log trails the client by a moment).
    func settledConnections(_ server: KeepAliveTLSServer, count: Int) async -> [KeepAliveTLSServer.Connection] {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let seen = server.connections
            if seen.count >= count && seen.allSatisfy({ $0.handshakeFailed || !$0.requests.isEmpty }) { return seen }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return server.connections
    }

    /// `/first` from `GET /first HTTP/1.1`.
    static func path(_ requestLine: String) -> String {
        let parts = requestLine.split(separator: " ")
        return parts.count > 1 ? String(parts[1]) : requestLine
    }

    static func outcome<Value>(_ body: () async throws(HTTPError) -> Value) async -> Result<Value, HTTPError> {
        do throws(HTTPError) { return .success(try await body()) } catch { return .failure(error) }
    }

    /// One transfer on the engine, as `Session` sends one hop.
    static func perform(_ engine: TransferEngine, url: String, verifier: HandshakeVerifier) async throws(HTTPError) -> SessionResponse {
        var options = RequestOptions()
        options.timeout = .seconds(20)
        let transfer = try Transfer(
            request: SessionRequest(method: .get, url: URL(string: url)!), options: options, verifier: verifier, clientCertificate: nil,
            addressCheck: nil, handles: engine.handles, headerLists: engine.headerLists)
        let result: Result<SessionResponse, HTTPError> = await withCheckedContinuation { continuation in
            transfer.completion = { continuation.resume(returning: $0) }
            engine.submit(transfer)
        }
        return try result.get()
    }
}
