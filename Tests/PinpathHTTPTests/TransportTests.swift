import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// The request core against real servers on loopback: `openssl s_server` with the test PKI, and a listener
/// that never answers.
@Suite("Transport and the trust gate", .serialized)
struct TransportTests {
    let pki = TestPKI.shared

    /// A server for the `ip` leaf (SAN IP:127.0.0.1) signed by the test intermediate.
    func server(www: Bool = true, transcript: String? = nil) throws -> TLSServer {
        try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory, www: www,
            transcript: transcript)
    }

    func session(pins: [String] = [], enforce: Bool = true) throws -> Session {
        var configuration = Session.Configuration(trustStore: try pki.trustStore())
        if !pins.isEmpty {
            let policy = try SecurityPolicy(
                mode: .publicKey, pins: try pki.chain(pins).map(\.spkiPin), enforce: enforce, requiresBackupPin: false)
            configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)])
        }
        return try Session(configuration)
    }

    func get(_ port: UInt16, options: RequestOptions = RequestOptions()) -> SessionRequest {
        SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(port)/")!)
    }

    @Test("libcurl is the OpenSSL build")
    func engine() throws {
        #expect(try Session.engineVersion().contains("OpenSSL/"))
    }

    @Test("A pinned intermediate passes; the response carries TLS details and the verified chain's pins")
    func pinnedPasses() async throws {
        let server = try server()
        defer { server.stop() }
        let response = try await session(pins: ["inter"]).send(get(server.port))
        #expect(response.statusCode == 200)
        #expect(response.remoteAddress == "127.0.0.1:\(server.port)")
        let tls = try #require(response.tls)
        #expect(tls.version.hasPrefix("TLSv1."))
        #expect(tls.verifiedChainPins == (try pki.chain(["ip", "inter", "root"])).map(\.spkiPin.description))
        #expect(response.timings.tls > 0 && response.timings.total >= response.timings.tls)
    }

    @Test("A wrong pin aborts in the handshake: the evaluation comes back and the server receives no request")
    func wrongPinSendsNothing() async throws {
        let transcript = "\(pki.directory)/transcript-\(UUID().uuidString)"
        let server = try server(www: false, transcript: transcript)
        defer { server.stop() }
        var options = RequestOptions()
        options.timeout = .seconds(5)
        await #expect {
            _ = try await session(pins: ["otherroot"]).send(get(server.port), options: options)
        } throws: { error in
            guard let error = error as? HTTPError, error.code == .policyRejected, let evaluation = error.evaluation else { return false }
            return evaluation.failure?.reason == .pinMismatch && !evaluation.verifiedChain.isEmpty
        }
        // The same server does see a request when the pin is right (so the transcript can show one).
        options.timeout = .milliseconds(700)
        _ = try? await session(pins: ["inter"]).send(get(server.port), options: options)
        let seen = try String(contentsOfFile: transcript, encoding: .utf8)
        #expect(seen.components(separatedBy: "GET / HTTP").count == 2, "exactly one request, from the correctly pinned session: \(seen)")
    }

    @Test("Report-only pins let the request through")
    func reportOnly() async throws {
        let server = try server()
        defer { server.stop() }
        let response = try await session(pins: ["otherroot"], enforce: false).send(get(server.port))
        #expect(response.statusCode == 200)
    }

    @Test("An untrusted chain is a TLS error with the evaluation")
    func untrustedChain() async throws {
        let server = try server()
        defer { server.stop() }
        var configuration = Session.Configuration(trustStore: try TrustStore(caFile: pki.path("otherroot")))
        configuration.defaultOptions.timeout = .seconds(5)
        await #expect {
            _ = try await Session(configuration).send(get(server.port))
        } throws: { error in
            guard let error = error as? HTTPError else { return false }
            return error.code == .tlsInvalid && error.evaluation?.failure?.reason == .chainInvalid
        }
    }

    @Test("Every new connection is checked again: no session resumption skips the verifier")
    func everyConnectionChecked() async throws {
        let server = try server()  // -www answers HTTP/1.0 and closes: each request is a new connection
        defer { server.stop() }
        let session = try session(pins: ["inter"])
        for _ in 0..<3 {
            let response = try await session.send(get(server.port))
            #expect(response.tls?.verifiedChainPins.isEmpty == false, "the verifier ran for this connection")
        }
    }

    @Test("Connect and total timeouts, refusal and cancellation end with their own codes")
    func failures() async throws {
        let silent = try SilentServer()
        defer { silent.stop() }
        let session = try session()
        var options = RequestOptions()
        options.timeout = .milliseconds(300)
        let started = ContinuousClock.now
        await #expect { _ = try await session.send(get(silent.port), options: options) } throws: { ($0 as? HTTPError)?.code == .timedOut }
        #expect(ContinuousClock.now - started < .seconds(3))

        let refused = try TLSServer.freePort()
        await #expect { _ = try await session.send(get(refused)) } throws: { ($0 as? HTTPError)?.code == .connectFailed }

        let hanging = get(silent.port)
        let task = Task { try await session.send(hanging) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await #expect { _ = try await task.value } throws: { ($0 as? HTTPError)?.code == .cancelled }
    }

    /// AddressSanitizer caught `pinpath run` exiting with a handshake still running on the libcurl thread,
    /// under OpenSSL's exit-time cleanup (a use-after-free): the agent now shuts its session down first.
    @Test("shutdown cancels the requests in flight, ends the libcurl thread, and refuses later requests")
    func shutdown() async throws {
        let silent = try SilentServer()
        defer { silent.stop() }
        let session = try session()
        let port = silent.port
        /// A GET with a 60 s timeout, far longer than the test waits: only the shutdown can end it early.
        @Sendable func hangingRequest() async throws -> SessionResponse {
            var options = RequestOptions()
            options.timeout = .seconds(60)
            return try await session.send(SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(port)/")!), options: options)
        }
        let started = ContinuousClock.now
        let inFlight = Task { try await hangingRequest() }
        try await Task.sleep(for: .milliseconds(200))
        session.shutdown()
        await #expect { _ = try await inFlight.value } throws: { ($0 as? HTTPError)?.code == .cancelled }
        #expect(ContinuousClock.now - started < .seconds(30))

        session.shutdown()  // idempotent
        let refused = await #expect(throws: HTTPError.self) { _ = try await hangingRequest() }
        #expect(refused?.code == .cancelled)
        #expect(refused?.message.contains("shutting down") == true, "\(String(describing: refused))")
    }

    @Test("A task preferring the session's executor runs on its libcurl thread, can be cancelled, and goes on after shutdown")
    func sessionExecutor() async throws {
        let server = try server()
        defer { server.stop() }
        let silent = try SilentServer()
        defer { silent.stop() }
        let session = try session(pins: ["inter"])
        let request = get(server.port)
        let (threadName, verified) = try await withTaskExecutorPreference(session.executor) {
            var verified: [Bool] = []
            for _ in 0..<3 { verified.append(try await session.send(request).tls?.verifiedChainPins.isEmpty == false) }
            return (Self.currentThreadName(), verified)
        }
        #expect(threadName == "pinpath-curl")
        #expect(verified == [true, true, true])

        let hanging = get(silent.port)
        let task = Task(executorPreference: session.executor) { try await session.send(hanging) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await #expect { _ = try await task.value } throws: { ($0 as? HTTPError)?.code == .cancelled }

        // Shut down from the libcurl thread itself: the next request is refused, and the task, still preferring
        // the stopped thread, runs on elsewhere instead of waiting forever.
        let afterShutdown = Task(executorPreference: session.executor) { () async -> (HTTPError.Code?, String) in
            session.shutdown()
            var code: HTTPError.Code?
            do throws(HTTPError) { _ = try await session.send(request) } catch { code = error.code }
            await Task.yield()
            return (code, Self.currentThreadName())
        }
        let (code, laterThread) = await afterShutdown.value
        #expect(code == .cancelled)
        #expect(laterThread != "pinpath-curl")
    }

    /// The calling thread's name, as the kernel knows it.
    static func currentThreadName() -> String {
        let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("A collected body asks for every content coding libcurl decodes, as libcurl's own \"all\" does (curl --compressed)")
    func acceptEncodingAsLibcurlsOwn() async throws {
        let directory = try TemporaryDirectory()
        let recorder = try RecordingServer(directory: directory.path)
        defer { recorder.stop() }
        let session = try Session()
        defer { session.shutdown() }
        _ = try await session.send(SessionRequest(method: .get, url: URL(string: "\(recorder.origin)/pinpath")!))
        // The curl program hands libcurl "" (every coding it supports), which pinpath lists itself once.
        try Shell.run(["curl", "--silent", "--compressed", "--output", "/dev/null", "\(recorder.origin)/curl"])
        let sent = recorder.requests.map { $0.header("Accept-Encoding") }
        #expect(sent.count == 2 && sent[0] != nil && sent[0] == sent[1], "\(sent)")
    }

    @Test("Header injection is refused before anything is sent")
    func headerInjection() async throws {
        var request = get(1)
        request.headers["X-Evil"] = "a\r\nHost: other"
        await #expect { _ = try await session().send(request) } throws: { ($0 as? HTTPError)?.code == .invalidHeader }
    }
}
