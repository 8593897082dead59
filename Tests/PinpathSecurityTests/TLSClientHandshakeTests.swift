import COpenSSL
import Foundation
import PinpathTestSupport
import Synchronization
import Testing

@testable import PinpathSecurity

/// The non-blocking client handshake on shared contexts (issue 30 item 1): ``TLSClientHandshake`` on a
/// non-blocking loopback socket driven with `poll`, against `openssl s_server`, judged by the connection's own
/// ``HandshakeVerifier``; ``TLSClientContexts`` building one `SSL_CTX` per distinct terms.
@Suite("TLS client handshake on shared contexts", .serialized)
struct TLSClientHandshakeTests {
    let pki = TestPKI.shared

    /// A verifier for `valid.test` on `port` pinning `pinned` (the test PKI's certificates by name), or
    /// checking the chain only without pins.
    func verifier(port: UInt16, pinned: [String]? = nil) throws -> HandshakeVerifier {
        let policy =
            if let pinned {
                try SecurityPolicy(mode: .publicKey, pins: try pki.chain(pinned).map(\.spkiPin), requiresBackupPin: false)
            } else {
                try SecurityPolicy(mode: .none)
            }
        return HandshakeVerifier(policy: policy, host: "valid.test", port: Int(port), trustStore: try pki.trustStore())
    }

    /// A server for the `valid` leaf and its intermediate that echoes what clients send into `transcript`.
    func server(transcript: String? = nil, extraArguments: [String] = []) throws -> TLSServer {
        try TLSServer(
            certificate: pki.path("valid"), key: pki.path("valid", "key"), chain: [pki.path("inter")], in: pki.directory,
            www: transcript == nil, transcript: transcript, extraArguments: extraArguments)
    }

    @Test("A valid chain completes: version and cipher, the verifier's verdict on this connection, one evaluation")
    func validChainCompletes() throws {
        let server = try server()
        defer { server.stop() }
        let contexts = TLSClientContexts()
        let verifier = try verifier(port: server.port, pinned: ["inter"])
        let outcome = try Self.handshake(port: server.port, context: try contexts.context(for: TLSClientTerms()), verifier: verifier)
        let negotiated = try outcome.get()
        #expect(negotiated.version == "TLSv1.3")
        #expect(negotiated.cipher.hasPrefix("TLS_"), "\(negotiated.cipher)")
        #expect(verifier.handshakesEvaluated == 1)
        let evaluation = try #require(try verifier.lastResult?.get())
        #expect(evaluation.allowsConnection && evaluation.failure == nil)
        #expect(evaluation.servedChain.map(\.subject) == (try pki.chain(["valid", "inter"])).map(\.subject))
    }

    @Test("A pin mismatch is refused by the verifier inside the handshake; the server receives no application data")
    func pinMismatchRefused() throws {
        let transcript = "\(pki.directory)/handshake-transcript-\(UUID().uuidString)"
        let server = try server(transcript: transcript)
        defer { server.stop() }
        let verifier = try verifier(port: server.port, pinned: ["otherroot"])
        let outcome = try Self.handshake(
            port: server.port, context: try TLSClientContexts().context(for: TLSClientTerms()), verifier: verifier)
        guard case .failure(let failure) = outcome else {
            Issue.record("accepted: \(outcome)")
            return
        }
        #expect(failure.code == .verifierRefused, "\(failure)")
        #expect(failure.description.hasPrefix("valid.test:\(server.port): refused by the security policy"), "\(failure)")
        let evaluation = try #require(try verifier.lastResult?.get())
        #expect(evaluation.failure?.reason == .pinMismatch)
        usleep(200_000)  // s_server writes what it received as it reads it
        let received = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
        #expect(received.isEmpty, "the server received: \(received)")
    }

    @Test("Two handshakes under the same terms share one SSL_CTX, and both reach the verifier (no resumption)")
    func sharedContextEveryHandshakeVerified() throws {
        let server = try server()
        defer { server.stop() }
        let contexts = TLSClientContexts()
        let verifier = try verifier(port: server.port)
        let first = try contexts.context(for: TLSClientTerms())
        _ = try Self.handshake(port: server.port, context: first, verifier: verifier).get()
        let second = try contexts.context(for: TLSClientTerms())
        _ = try Self.handshake(port: server.port, context: second, verifier: verifier).get()
        #expect(first === second)
        #expect(contexts.contextsBuilt == 1)
        // A resumed session would skip the verify callback: each handshake was a full one.
        #expect(verifier.handshakesEvaluated == 2)
    }

    @Test("removeAll drops the contexts: the next handshake builds a new one, and one under way keeps its own")
    func removeAllKeepsLiveHandshakes() throws {
        let server = try server()
        defer { server.stop() }
        let contexts = TLSClientContexts()
        let verifier = try verifier(port: server.port)
        let fd = try TLSServer.connectLoopback(port: server.port)
        defer { close(fd) }
        #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0)
        let underWay = try TLSClientHandshake(
            context: try contexts.context(for: TLSClientTerms()), socket: fd, serverName: "valid.test", verifier: verifier)
        #expect(underWay.advance() == .wantRead)  // the ClientHello is out
        contexts.removeAll()
        #expect(contexts.count == 0)
        let fresh = try contexts.context(for: TLSClientTerms())
        #expect(fresh !== underWay.context && contexts.contextsBuilt == 2)
        let deadline = ContinuousClock.now + TestTime.scaled(.seconds(10))
        while underWay.advance() != .finished && ContinuousClock.now < deadline {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&entry, 1, 100)
        }
        #expect(try underWay.outcome?.get().version == "TLSv1.3")
        #expect(verifier.handshakesEvaluated == 1)
    }

    @Test("Threads asking at once for the same terms share one context")
    func concurrentRequestsShareOne() throws {
        let clients = ClientCertificatePKI.shared
        let contexts = TLSClientContexts()
        let terms = TLSClientTerms(
            clientCertificate: ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: clients.path("client", "key")))
        let results = Mutex<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            guard let context = try? contexts.context(for: terms) else { return }
            results.withLock { $0.append(ObjectIdentifier(context)) }
        }
        let identities = results.withLock { $0 }
        #expect(identities.count == 16 && Set(identities).count == 1)
    }

    @Test("Tasks asking at once for the same terms wait for one build: one context, built once")
    func concurrentTasksBuildOnce() async throws {
        let clients = ClientCertificatePKI.shared
        let contexts = TLSClientContexts()
        let terms = TLSClientTerms(
            clientCertificate: ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: clients.path("client", "key")))
        let deadline = ContinuousClock.now + TestTime.scaled(.seconds(10))
        let identities = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<16 { group.addTask { ObjectIdentifier(try await contexts.context(for: terms, deadline: deadline)) } }
            return try await group.reduce(into: [ObjectIdentifier]()) { $0.append($1) }
        }
        #expect(identities.count == 16 && Set(identities).count == 1)
        #expect(contexts.contextsBuilt == 1)
    }

    @Test(
        "A client certificate or key path that is a FIFO a writer holds open fails at once, naming the file: not a regular file",
        arguments: ["certificate", "key"])
    func fifoClientFileFailsFast(which: String) async throws {
        let clients = ClientCertificatePKI.shared
        let directory = try TemporaryDirectory()
        let fifo = "\(directory.path)/client-\(which).pem"
        try #require(mkfifo(fifo, 0o600) == 0)
        // Opened for reading and writing, a FIFO opens at once and keeps a writer: a read of it waits for bytes
        // that never come (before the fix, the check hung there, holding the cache's lock).
        let writer = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0)
        let files =
            which == "certificate"
            ? ClientCertificateFiles(certificatePath: fifo, keyPath: clients.path("client", "key"))
            : ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: fifo)
        let terms = TLSClientTerms(clientCertificate: files)
        let contexts = TLSClientContexts()
        let answer = Self.answered { () throws(SecurityError) in try contexts.context(for: terms) }
        close(writer)  // lets a read that blocked end, so that a failing run does not leave a thread behind
        guard case .failure(let error) = try #require(answer.value, "no answer while a writer held the FIFO open") else {
            Issue.record("a FIFO was accepted as a client \(which)")
            return
        }
        #expect(error.code == (which == "certificate" ? .unreadableFile : .unusableClientKey), "\(error)")
        #expect(error.message.contains("\(fifo): is a FIFO (named pipe), not a regular file"), "\(error)")

        // The tasks' path refuses it the same way, before its deadline rather than at it.
        let writerAgain = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        try #require(writerAgain >= 0)
        defer { close(writerAgain) }
        await #expect {
            _ = try await contexts.context(for: terms, deadline: .now + TestTime.scaled(.seconds(30)))
        } throws: { error in
            (error as? SecurityError)?.message.contains("\(fifo): is a FIFO (named pipe), not a regular file") == true
        }
    }

    @Test(
        "While a context's build is held, terms without a client certificate get theirs at once; a task waiting for the held one gives up at its deadline naming the files"
    )
    func heldBuildStallsNoOtherTerms() async throws {
        let clients = ClientCertificatePKI.shared
        let slow = TLSClientTerms(
            clientCertificate: ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: clients.path("client", "key")))
        let gate = HeldBuild()
        // A build of `slow` waits for the gate: as one reading a file on a file system that does not answer.
        let contexts = TLSClientContexts { terms throws(SecurityError) in
            if terms == slow { gate.hold() }
            return try TLSClientContext(terms: terms)
        }
        defer { gate.release() }
        let held = Self.answered(within: .zero) { () throws(SecurityError) in try contexts.context(for: slow) }
        try #require(gate.waitUntilEntered(1), "the build of the held terms did not start")
        #expect(held.value == nil)

        let plain = Self.answered { () throws(SecurityError) in try contexts.context(for: TLSClientTerms()) }
        let plainContext = try #require(try plain.value?.get(), "terms without a client certificate waited for another build")
        let plainForTask = try await contexts.context(for: TLSClientTerms(), deadline: .now + TestTime.scaled(.seconds(10)))
        #expect(plainForTask === plainContext)

        await #expect {
            _ = try await contexts.context(for: slow, deadline: .now + .milliseconds(200))
        } throws: { error in
            guard let error = error as? SecurityError else { return false }
            return error.code == .timedOut && error.message.contains(clients.path("client", "key"))
                && error.message.contains("deadline")
        }

        gate.release()
        #expect(try held.wait()?.get() != nil)
        // What was built while the task waited is kept for the next task.
        _ = try await contexts.context(for: slow, deadline: .now + TestTime.scaled(.seconds(10)))
        #expect(contexts.count == 2)
    }

    @Test("A task waiting for a held build ends with cancelled when cancelled; a build begun before removeAll is not kept")
    func heldBuildCancelledAndReload() async throws {
        let clients = ClientCertificatePKI.shared
        let slow = TLSClientTerms(
            clientCertificate: ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: clients.path("client", "key")))
        let gate = HeldBuild()
        let contexts = TLSClientContexts { terms throws(SecurityError) in
            if terms == slow { gate.hold() }
            return try TLSClientContext(terms: terms)
        }
        defer { gate.release() }
        let waiting = Task {
            try await contexts.context(for: slow, deadline: .now + .seconds(3600))
        }
        try #require(gate.waitUntilEntered(1), "the build of the held terms did not start")
        waiting.cancel()
        guard case .failure(let error) = await waiting.result else {
            Issue.record("a cancelled wait returned a context")
            return
        }
        #expect((error as? SecurityError)?.code == .cancelled, "\(error)")

        // A second build of the same terms, held too; then a reload while both are under way.
        let held = Self.answered(within: .zero) { () throws(SecurityError) in try contexts.context(for: slow) }
        try #require(gate.waitUntilEntered(2), "the second build of the held terms did not start")
        contexts.removeAll()
        gate.release()
        let beforeReload = try #require(try held.wait()?.get())
        #expect(contexts.count == 0, "a context built from files looked at before the reload was kept")
        let afterReload = try contexts.context(for: slow)
        #expect(afterReload !== beforeReload && contexts.count == 1)
    }

    /// What `work`, run on a thread of its own, answered within `bound` (scaled), or `nil`: a call that blocks
    /// fails the test instead of hanging it.
    static func answered<Value: Sendable>(
        within bound: Duration = .seconds(10), _ work: @escaping @Sendable () throws(SecurityError) -> Value
    ) -> Answer<Value> {
        let answer = Answer<Value>()
        DispatchQueue.global().async {
            answer.set(Result { () throws(SecurityError) -> Value in try work() })
        }
        _ = answer.wait(for: TestTime.scaled(bound))
        return answer
    }

    /// The result of work run on another thread, once it has one.
    final class Answer<Value: Sendable>: @unchecked Sendable {
        // @unchecked: `result` is read and written only with `condition` locked.
        private let condition = NSCondition()
        private var result: Result<Value, SecurityError>?

        /// The result now, if there is one.
        var value: Result<Value, SecurityError>? {
            condition.withLock { result }
        }

        func set(_ result: Result<Value, SecurityError>) {
            condition.withLock {
                self.result = result
                condition.broadcast()
            }
        }

        /// Waits up to `timeout` (for ever when `nil`) for the result.
        @discardableResult
        func wait(for timeout: Duration? = nil) -> Result<Value, SecurityError>? {
            let limit = timeout.map { Date() + Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
            return condition.withLock {
                while result == nil {
                    if let limit { guard condition.wait(until: limit) else { break } } else { condition.wait() }
                }
                return result
            }
        }
    }

    /// Holds every build that calls ``hold()`` until ``release()``.
    final class HeldBuild: @unchecked Sendable {
        // @unchecked: the counters are read and written only with `condition` locked.
        private let condition = NSCondition()
        private var released = false
        private var entered = 0

        func hold() {
            condition.withLock {
                entered += 1
                condition.broadcast()
                while !released { condition.wait() }
            }
        }

        /// Whether `count` builds have reached ``hold()`` within 10 s (scaled).
        func waitUntilEntered(_ count: Int) -> Bool {
            let limit = Date() + Double(10 * TestTime.scale)
            return condition.withLock {
                while entered < count { guard condition.wait(until: limit) else { return entered >= count } }
                return true
            }
        }

        func release() {
            condition.withLock {
                released = true
                condition.broadcast()
            }
        }
    }

    @Test("Terms with a client certificate build a second context, which presents it to a server that requires one")
    func clientCertificateContext() throws {
        let clients = ClientCertificatePKI.shared
        // TLS 1.2: the server's refusal of a missing certificate arrives inside the handshake (under TLS 1.3 it
        // comes after the client's side is done, which a handshake-only check does not read).
        let server = try server(
            extraArguments: ["-Verify", "1", "-verify_return_error", "-CAfile", clients.path("client-ca"), "-tls1_2"])
        defer { server.stop() }
        let contexts = TLSClientContexts()
        let plain = try contexts.context(for: TLSClientTerms())
        let terms = TLSClientTerms(
            clientCertificate: ClientCertificateFiles(
                certificatePath: clients.path("client"), keyPath: clients.path("client-encrypted", "key"),
                password: ClientCertificatePKI.password))
        let withCertificate = try contexts.context(for: terms)
        #expect(plain !== withCertificate)
        #expect(contexts.contextsBuilt == 2)
        #expect(try contexts.context(for: terms) === withCertificate)
        #expect(!"\(terms)".contains(ClientCertificatePKI.password), "\(terms)")

        let sent = try Self.handshake(port: server.port, context: withCertificate, verifier: try verifier(port: server.port))
        #expect(try sent.get().version == "TLSv1.2")

        let missing = try Self.handshake(port: server.port, context: plain, verifier: try verifier(port: server.port))
        guard case .failure(let failure) = missing else {
            Issue.record("a server that requires a client certificate accepted none: \(missing)")
            return
        }
        #expect(failure.code == .clientCertificate, "\(failure)")
        #expect(failure.reason.contains("none is configured") && failure.reason.contains(" alert "), "\(failure)")
    }

    @Test("A client certificate file rotated in place builds a new context; an unchanged one does not")
    func rotatedCertificateRebuilds() throws {
        let clients = ClientCertificatePKI.shared
        let directory = try TemporaryDirectory()
        let certificate = directory.path + "/client.pem"
        let key = directory.path + "/client.key"
        try FileManager.default.copyItem(atPath: clients.path("client"), toPath: certificate)
        try FileManager.default.copyItem(atPath: clients.path("client", "key"), toPath: key)
        let terms = TLSClientTerms(clientCertificate: ClientCertificateFiles(certificatePath: certificate, keyPath: key))
        let contexts = TLSClientContexts()
        let before = try contexts.context(for: terms)
        #expect(try contexts.context(for: terms) === before)

        // Rotated as a deployment does it: new files written beside, then renamed over the old ones.
        try FileManager.default.copyItem(atPath: clients.path("stranger"), toPath: certificate + ".new")
        try FileManager.default.copyItem(atPath: clients.path("stranger", "key"), toPath: key + ".new")
        #expect(rename(certificate + ".new", certificate) == 0 && rename(key + ".new", key) == 0)
        let after = try contexts.context(for: terms)
        #expect(after !== before)
        #expect(contexts.contextsBuilt == 2)
        #expect(contexts.count == 1, "the rotated-out context is dropped from the cache")
        #expect(try contexts.context(for: terms) === after)
    }

    @Test("Client certificate files that cannot be used: errors name the file and what is wrong, never the password")
    func unusableClientCertificate() throws {
        let clients = ClientCertificatePKI.shared
        let cases: [(ClientCertificateFiles, SecurityError.Code, String)] = [
            (
                ClientCertificateFiles(certificatePath: "/nonexistent/client.pem", keyPath: clients.path("client", "key")),
                .unreadableFile, "cannot read the client certificate /nonexistent/client.pem"
            ),
            (
                ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: "/nonexistent/client.key"),
                .unusableClientKey, "cannot read the client key /nonexistent/client.key"
            ),
            (
                ClientCertificateFiles(
                    certificatePath: clients.path("client"), keyPath: clients.path("client-encrypted", "key"), password: "wrong horse"),
                .unusableClientKey,
                "\(clients.path("client-encrypted", "key")): the private key cannot be decrypted with the password given"
            ),
            (
                ClientCertificateFiles(certificatePath: clients.path("client"), keyPath: clients.path("stranger", "key")),
                .unusableClientKey, "does not belong to the certificate in \(clients.path("client"))"
            ),
            (
                ClientCertificateFiles(certificatePath: clients.path("client", "key"), keyPath: clients.path("client", "key")),
                .invalidInput, "\(clients.path("client", "key")) holds no PEM certificate"
            ),
        ]
        let contexts = TLSClientContexts()
        for (files, code, message) in cases {
            #expect {
                _ = try contexts.context(for: TLSClientTerms(clientCertificate: files))
            } throws: { error in
                guard let error = error as? SecurityError else { return false }
                return error.code == code && error.message.contains(message) && !error.message.contains("wrong horse")
            }
        }
        #expect(contexts.contextsBuilt == 0 && contexts.count == 0)
    }

    @Test("A connection of a shared context with no verifier installed fails closed")
    func noVerifierFailsClosed() throws {
        let server = try server()
        defer { server.stop() }
        let context = try TLSClientContexts().context(for: TLSClientTerms())
        let ssl = try #require(SSL_new(context.pointer))
        defer { SSL_free(ssl) }
        let fd = try TLSServer.connectLoopback(port: server.port)
        defer { close(fd) }
        #expect(SSL_set_fd(ssl, fd) == 1)
        let connected = SSL_connect(ssl) == 1
        ERR_clear_error()
        #expect(!connected)
        #expect(SSL_get_verify_result(ssl) == Int(X509_V_ERR_APPLICATION_VERIFICATION))
        #expect(HandshakeVerifier.accepted(ssl) == nil)
    }

    @Test("The OCSP status callback of a shared context judges the staple with the connection's verifier")
    func stapleJudgedByConnectionVerifier() throws {
        let revocation = RevocationPKI.shared
        func serve(_ leaf: String, staple: String?) throws -> TLSServer {
            try TLSServer(
                certificate: revocation.file("\(leaf).pem"), key: revocation.file("\(leaf).key"), chain: [revocation.file("inter.pem")],
                in: revocation.directory, extraArguments: staple.map { ["-status_file", revocation.file($0)] } ?? [])
        }
        let context = try TLSClientContexts().context(for: TLSClientTerms())
        func verifier(port: UInt16) throws -> HandshakeVerifier {
            HandshakeVerifier(
                policy: try SecurityPolicy(mode: .none, revocation: .stapled), host: "valid.test", port: Int(port),
                trustStore: try revocation.trustStore())
        }

        // Stapled: the callback found this connection's verifier, which accepted and recorded the staple.
        let stapled = try serve("muststaple", staple: "muststaple.ocsp")
        defer { stapled.stop() }
        let accepting = try verifier(port: stapled.port)
        _ = try Self.handshake(port: stapled.port, context: context, verifier: accepting).get()
        let evaluation = try #require(try accepting.lastResult?.get())
        #expect(evaluation.ocspStaple?.status == .good, "\(String(describing: evaluation.ocspStaple))")

        // Not stapled: the verifier refuses the must-staple leaf in the status callback, after accepting the chain.
        let bare = try serve("muststaple", staple: nil)
        defer { bare.stop() }
        let refusing = try verifier(port: bare.port)
        let outcome = try Self.handshake(port: bare.port, context: context, verifier: refusing)
        guard case .failure(let failure) = outcome else {
            Issue.record("a must-staple leaf without a staple was accepted")
            return
        }
        #expect(failure.code == .verifierRefused, "\(failure)")
        #expect(try refusing.lastResult?.get().failure?.reason == .ocspStapleMissing)
    }

    @Test("A server that closes the connection, sends an alert or does not speak TLS: told apart from a refusal")
    func transportFailures() throws {
        let context = try TLSClientContexts().context(for: TLSClientTerms())
        // A listener whose one connection is accepted and closed before the client's first byte.
        let (listener, port) = try TLSServer.bindLoopback()
        defer { close(listener) }
        #expect(listen(listener, 1) == 0)
        let closed = try Self.handshake(port: port, context: context, verifier: try verifier(port: port)) {
            close(accept(listener, nil, nil))
        }
        guard case .failure(let closedFailure) = closed else {
            Issue.record("accepted: \(closed)")
            return
        }
        #expect(closedFailure.code == .connectionClosed || closedFailure.code == .socketFailure, "\(closedFailure)")

        let alerting = try HostileServer(.tlsAlert)
        defer { alerting.stop() }
        let alert = try Self.handshake(port: alerting.port, context: context, verifier: try verifier(port: alerting.port))
        guard case .failure(let alertFailure) = alert else {
            Issue.record("accepted: \(alert)")
            return
        }
        #expect(alertFailure.code == .protocolFailure, "\(alertFailure)")
        #expect(alertFailure.reason.contains("the server ended TLS with an alert"), "\(alertFailure)")
        #expect(alertFailure.openSSLErrors.contains { $0.contains("SSL routines") && $0.contains("alert handshake failure") })

        let greeter = try MailServer(.tcp, .greet, directory: pki.directory)
        defer { greeter.stop() }
        let banner = try Self.handshake(port: greeter.port, context: context, verifier: try verifier(port: greeter.port))
        guard case .failure(let bannerFailure) = banner else {
            Issue.record("accepted: \(banner)")
            return
        }
        #expect(bannerFailure.code == .protocolFailure, "\(bannerFailure)")
        #expect(bannerFailure.reason.contains("does not speak TLS"), "\(bannerFailure)")
    }

    @Test("A server that never answers: advance() returns at once, wanting to read, and never blocks")
    func silentServerNeverBlocks() throws {
        let server = try HostileServer(.silent)
        defer { server.stop() }
        let fd = try TLSServer.connectLoopback(port: server.port)
        defer { close(fd) }
        #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0)
        let handshake = try TLSClientHandshake(
            context: try TLSClientContexts().context(for: TLSClientTerms()), socket: fd, serverName: "valid.test",
            verifier: try verifier(port: server.port))
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(handshake.advance() == .wantRead) }
        #expect(start.duration(to: .now) < .seconds(2), "advance() waited for the server")
        #expect(handshake.outcome == nil)
    }

    @Test("A TLS 1.1 server fails as it does through libcurl: OpenSSL's security level refuses its legacy signature")
    func oldProtocolRefused() throws {
        let server = try server(extraArguments: ["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"])
        defer { server.stop() }
        let verifier = try verifier(port: server.port)
        let outcome = try Self.handshake(
            port: server.port, context: try TLSClientContexts().context(for: TLSClientTerms()), verifier: verifier)
        guard case .failure(let failure) = outcome else {
            Issue.record("a TLS 1.1 handshake completed: \(outcome)")
            return
        }
        #expect(failure.code == .protocolFailure, "\(failure)")
        // curl 7.88.1 on the same server: "OpenSSL/3.0.19: error:0A00014D:SSL routines::legacy sigalg disallowed or unsupported".
        #expect(failure.openSSLErrors.contains { $0.contains("legacy sigalg disallowed or unsupported") }, "\(failure)")
        // The chain came first and passed: the failure is the protocol's, not the verifier's.
        #expect((try? verifier.lastResult?.get())?.allowsConnection == true)
    }

    // MARK: - Driving a handshake

    /// Connects a non-blocking socket to 127.0.0.1:`port` and drives a handshake on it with `poll` until it
    /// finishes (at most 10 s, scaled); closes the socket. `afterConnecting` runs once the socket is connected.
    static func handshake(
        port: UInt16, context: TLSClientContext, verifier: HandshakeVerifier, serverName: String? = "valid.test",
        afterConnecting: () -> Void = {}
    ) throws -> Result<NegotiatedTLS, TLSHandshakeFailure> {
        let fd = try TLSServer.connectLoopback(port: port)
        defer { close(fd) }
        afterConnecting()
        #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0)
        let handshake = try TLSClientHandshake(context: context, socket: fd, serverName: serverName, verifier: verifier)
        let deadline = ContinuousClock.now + TestTime.scaled(.seconds(10))
        while true {
            let events: Int16
            switch handshake.advance() {
            case .finished: return try #require(handshake.outcome)
            case .wantRead: events = Int16(POLLIN)
            case .wantWrite: events = Int16(POLLOUT)
            }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let remaining = ContinuousClock.now.duration(to: deadline)
            try #require(remaining > .zero, "the handshake did not finish in time")
            _ = poll(&entry, 1, Int32(remaining.components.seconds * 1000 + 1))
        }
    }
}
