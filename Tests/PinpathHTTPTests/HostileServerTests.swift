import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// The request core against servers that misbehave on purpose (issue 6): each request ends within its
/// timeout plus a margin, with its own error code, and the session keeps working afterwards.
@Suite("Hostile servers", .serialized)
struct HostileServerTests {
    let pki = TestPKI.shared
    static let timeout = TestTime.scaled(.seconds(2))
    /// Scheduling slack on a shared two-core machine; a failure here is a hang, not jitter.
    static let margin = TestTime.scaled(.seconds(1))

    /// One hostile behaviour, the scheme to talk to it and the code the request must end with.
    enum Case: String, CaseIterable, CustomTestStringConvertible {
        case silent, slowloris, headerFlood, hugeBody, hugeChunkedBody, malformedStatusLine, notHTTP, oversizedHeader, resetMidResponse,
            tlsAlert, refuse

        var testDescription: String { rawValue }

        var behaviour: HostileServer.Behaviour {
            switch self {
            case .silent: .silent
            case .slowloris: .slowloris
            case .headerFlood: .headerFlood
            case .hugeBody: .hugeBody(announced: true)
            case .hugeChunkedBody: .hugeBody(announced: false)
            case .malformedStatusLine: .malformedStatusLine("HTTP/1.1 two hundred OK")
            case .notHTTP: .malformedStatusLine("SSH-2.0-OpenSSH_9.2")
            case .oversizedHeader: .oversizedHeader
            case .resetMidResponse: .resetMidResponse
            case .tlsAlert: .tlsAlert
            case .refuse: .refuse
            }
        }

        var scheme: String { self == .tlsAlert ? "https" : "http" }

        var expected: HTTPError.Code {
            switch self {
            case .silent, .slowloris: .timedOut
            case .headerFlood, .hugeBody, .hugeChunkedBody, .malformedStatusLine, .notHTTP, .oversizedHeader, .resetMidResponse:
                .protocolError
            case .tlsAlert: .tlsFailed
            case .refuse: .connectFailed
            }
        }
    }

    func session(pins: [String] = []) throws -> Session { try pki.loopbackSession(pins: pins) }

    static func options() -> RequestOptions {
        var options = RequestOptions()
        options.timeout = timeout
        options.connectTimeout = timeout
        options.freshConnection = true
        return options
    }

    /// Sends one GET; returns the error (nil on success), the response, and how long it took.
    static func attempt(_ session: Session, _ url: String) async -> (error: HTTPError?, response: SessionResponse?, elapsed: Duration) {
        let started = ContinuousClock.now
        do throws(HTTPError) {
            let response = try await session.send(SessionRequest(method: .get, url: URL(string: url)!), options: options())
            return (nil, response, ContinuousClock.now - started)
        } catch {
            return (error, nil, ContinuousClock.now - started)
        }
    }

    /// The `ip` leaf (SAN IP:127.0.0.1) and the test intermediate: a well-behaved identity.
    var goodIdentity: HostileServer.TLSIdentity {
        HostileServer.TLSIdentity(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")])
    }

    /// The same session still completes a normal request against a well-behaved server.
    func expectStillWorks(_ session: Session) async throws {
        let server = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { server.stop() }
        let (error, response, _) = await Self.attempt(session, "https://127.0.0.1:\(server.port)/")
        #expect(error == nil, "after the hostile server, a normal request failed: \(error?.message ?? "")")
        #expect(response?.statusCode == 200)
    }

    @Test("Each hostile behaviour ends within the timeout with its own code, and the session keeps working", arguments: Case.allCases)
    func hostile(_ which: Case) async throws {
        let server = try HostileServer(which.behaviour, directory: pki.directory)
        defer { server.stop() }
        let session = try session()
        let (error, _, elapsed) = await Self.attempt(session, "\(which.scheme)://127.0.0.1:\(server.port)/")
        print("hostile \(which.rawValue): \(error?.code.description ?? "success") after \(elapsed): \(error?.message ?? "")")
        #expect(error?.code == which.expected, "\(error?.message ?? "no error")")
        #expect(elapsed < Self.timeout + Self.margin)
        try await expectStillWorks(session)
    }

    @Test("A 1 GiB body stops at maximumBodySize: at once when announced, after the limit when chunked")
    func hugeBodyStopsEarly() async throws {
        let session = try session()
        let limit = RequestOptions().maximumBodySize
        for announced in [true, false] {
            let server = try HostileServer(.hugeBody(announced: announced), directory: pki.directory)
            defer { server.stop() }
            let (error, _, elapsed) = await Self.attempt(session, "http://127.0.0.1:\(server.port)/")
            print(
                """
                hostile hugeBody announced=\(announced): \(error?.code.description ?? "success") after \(elapsed), server sent \
                \(server.bytesSent) bytes
                """
            )
            #expect(error?.code == .protocolError, "\(error?.message ?? "no error")")
            #expect(elapsed < Self.timeout + Self.margin)
            // What the server managed to send bounds what the client read (socket buffers are a few MiB).
            if announced {
                #expect(server.bytesSent < 8 << 20, "refused from Content-Length, yet the server sent \(server.bytesSent) bytes")
            } else {
                #expect(server.bytesSent < limit + (16 << 20), "sent \(server.bytesSent) bytes")
            }
        }
    }

    @Test("Attack: a chunked body's trailing fields are not header fields: a trailing Location is not followed, nor a field read")
    func trailingFieldsIgnored() async throws {
        let session = try session()
        var following = Self.options()
        following.followRedirects = true
        let redirect = try HostileServer(
            .trailingFields(status: "HTTP/1.1 302 Found", trailers: ["Location: /elsewhere"]), directory: pki.directory)
        defer { redirect.stop() }
        let url = URL(string: "http://127.0.0.1:\(redirect.port)/")!
        let response = try await session.send(SessionRequest(method: .get, url: url), options: following)
        #expect(
            response.statusCode == 302 && response.redirectCount == 0, "status \(response.statusCode), \(response.redirectCount) redirects")
        #expect(response.headers["Location"] == nil && redirect.connections == 1)
        let typed = try HostileServer(
            .trailingFields(status: "HTTP/1.1 200 OK", trailers: ["Content-Length: 999", "X-Trailer: evil"]), directory: pki.directory)
        defer { typed.stop() }
        let (error, answer, _) = await Self.attempt(session, "http://127.0.0.1:\(typed.port)/")
        #expect(error == nil, "\(error?.message ?? "")")
        #expect(answer?.body == Array("ok".utf8))
        #expect(answer?.headers["X-Trailer"] == nil && answer?.headers["Content-Length"] == nil)
        #expect(answer?.headers["Content-Type"] == "text/plain")
    }

    @Test("HEAD of a 1 GiB resource is fine: the announced length of a body that is not sent is not a body")
    func headOfHugeBody() async throws {
        let server = try HostileServer(.hugeBody(announced: true), directory: pki.directory)
        defer { server.stop() }
        let response = try await session().send(
            SessionRequest(method: .head, url: URL(string: "http://127.0.0.1:\(server.port)/")!), options: Self.options())
        #expect(response.statusCode == 200)
        #expect(response.headers["Content-Length"] == "\(1 << 30)")
    }

    @Test("A TLS 1.3 alert after the client's side of the handshake (client certificate required) is tls_failed")
    func alertAfterHandshake() async throws {
        let server = try HostileServer(.tlsAlertAfterHandshake(goodIdentity), directory: pki.directory)
        defer { server.stop() }
        let session = try session()
        let (error, _, elapsed) = await Self.attempt(session, "https://127.0.0.1:\(server.port)/")
        print("hostile tlsAlertAfterHandshake: \(error?.code.description ?? "success") after \(elapsed): \(error?.message ?? "")")
        #expect(error?.code == .tlsFailed, "\(error?.message ?? "no error")")
        #expect(elapsed < Self.timeout + Self.margin)
        try await expectStillWorks(session)
    }

    @Test("A server sending 50 certificates: the chain is built from the ones that matter, or rejected as invalid")
    func fiftyCertificates() async throws {
        // 48 filler certificates after leaf and intermediate: the chain still builds to the test root.
        let padded = try HostileServer(
            .manyCertificates(goodIdentity, filler: HostileServer.fillerCertificates(count: 48, in: pki.directory)),
            directory: pki.directory)
        defer { padded.stop() }
        let session = try session()
        let (error, response, elapsed) = await Self.attempt(session, "https://127.0.0.1:\(padded.port)/")
        #expect(error == nil, "\(error?.message ?? "")")
        #expect(elapsed < Self.timeout + Self.margin)
        let evaluation = try #require(response?.tls?.evaluation)
        #expect(evaluation.servedChain.count == 50)
        #expect(evaluation.verifiedChain.count == 3)

        // 49 filler certificates and no intermediate: 50 certificates, none leading to a trusted root.
        var unrelated = goodIdentity
        unrelated.chain = []
        let broken = try HostileServer(
            .manyCertificates(unrelated, filler: HostileServer.fillerCertificates(count: 49, in: pki.directory)), directory: pki.directory)
        defer { broken.stop() }
        let (brokenError, _, brokenElapsed) = await Self.attempt(session, "https://127.0.0.1:\(broken.port)/")
        print(
            """
            hostile manyCertificates: padded \(error?.code.description ?? "success") after \(elapsed); unrelated \
            \(brokenError?.code.description ?? "success") after \(brokenElapsed): \(brokenError?.message ?? "")
            """
        )
        #expect(brokenError?.code == .tlsInvalid, "\(brokenError?.message ?? "no error")")
        #expect(brokenError?.evaluation?.servedChain.count == 50)
        #expect(brokenElapsed < Self.timeout + Self.margin)
        try await expectStillWorks(session)
    }

    @Test("A server that switches certificates between connections is checked on every connection")
    func switchingCertificates() async throws {
        let other = try pki.otherIPLeaf()
        let server = try HostileServer(
            .switchingCertificates(
                goodIdentity, HostileServer.TLSIdentity(certificate: other.certificate, key: other.key, chain: [pki.path("otherinter")])),
            directory: pki.directory)
        defer { server.stop() }
        let session = try session(pins: ["inter"])  // pins only the first chain's intermediate
        let url = "https://127.0.0.1:\(server.port)/"
        let (first, response, _) = await Self.attempt(session, url)
        #expect(first == nil, "\(first?.message ?? "")")
        #expect(response?.statusCode == 200)
        let (second, _, elapsed) = await Self.attempt(session, url)
        print(
            """
            hostile switchingCertificates: first \(first?.code.description ?? "success"), second \
            \(second?.code.description ?? "success") after \(elapsed)
            """
        )
        #expect(second?.code == .policyRejected, "\(second?.message ?? "no error")")
        #expect(second?.evaluation?.failure?.reason == .pinMismatch)
        #expect(elapsed < Self.timeout + Self.margin)
        #expect(server.connections == 2)
        let (third, _, _) = await Self.attempt(session, url)
        #expect(third == nil, "the third connection gets the pinned chain again: \(third?.message ?? "")")
    }

    @Test("stop() ends connections that are still open, joins every thread and closes every socket")
    func stopIsClean() throws {
        // The kit's own counts: the process's /proc/self/fd and task counts move with the suites running
        // in parallel.
        let behaviours: [HostileServer.Behaviour] = [
            .silent, .slowloris, .headerFlood, .hugeBody(announced: true), .tlsAlert, .manyCertificates(goodIdentity, filler: []),
        ]
        for (index, behaviour) in behaviours.enumerated() {
            let server = try HostileServer(behaviour, directory: pki.directory)
            // Two clients that never read nor close: their server threads are blocked waiting on them. The TLS
            // ones get nothing, so that the server waits for a ClientHello instead of rejecting the request.
            let clients = try (0..<2).map { _ in try TLSServer.connectLoopback(port: server.port) }
            var request = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            if index < 4 { for client in clients { _ = send(client, &request, request.count, Int32(MSG_NOSIGNAL)) } }
            while server.connections < 2 { usleep(1000) }
            usleep(50_000)
            #expect(
                server.runningThreads == 3 && server.openSockets >= 2,
                "\(behaviour): \(server.runningThreads) threads, \(server.openSockets) sockets")
            let started = ContinuousClock.now
            server.stop()
            #expect(ContinuousClock.now - started < TestTime.scaled(.seconds(1)), "stop() took \(ContinuousClock.now - started)")
            #expect(
                server.runningThreads == 0 && server.openSockets == 0,
                "\(behaviour): \(server.runningThreads) threads, \(server.openSockets) sockets")
            for client in clients { close(client) }
        }
    }
}

/// The built `pinpath` against every hostile server at once: `run --once` exits within a bound, with one
/// `probe.completed` per endpoint carrying the expected `error_category`, and exit code 1; `run` keeps
/// probing them all and stops cleanly on SIGTERM.
@Suite("The agent against hostile servers", .serialized)
struct HostileAgentTests {
    let pki = TestPKI.shared
    /// How long `run --once` may take: the probes run concurrently, each bounded by its 2 s timeout.
    static let bound = TestTime.scaled(.seconds(10))

    /// The hostile servers, a configuration naming them, and the category each endpoint's probe must end with.
    final class Scene {
        let hostile: HostileAgentScene
        let expected: [String: String?]
        let configurationPath: String
        var switchingEndpoints: [String] { hostile.switchingEndpoints }

        init(_ hostile: HostileAgentScene, configurationPath: String) {
            self.hostile = hostile
            self.configurationPath = configurationPath
            var expected: [String: String?] = [:]
            for endpoint in hostile.endpoints where !hostile.switchingEndpoints.contains(endpoint.name) {
                expected[endpoint.name] = endpoint.expectedCategory
            }
            self.expected = expected
        }
    }

    func scene(interval: String, timeout: String) throws -> Scene {
        let hostile = try HostileAgentScene(pki: pki)
        let configuration = """
            events: { output: stdout, probes: all }
            policies:
            \(hostile.policiesYAML)endpoints:
            \(hostile.endpointsYAML(interval: interval, timeout: timeout))
            """
        let path = pki.file("hostile-agent-\(UUID().uuidString).yaml")
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        return Scene(hostile, configurationPath: path)
    }

    static func events(_ path: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func spawn(_ arguments: [String], output path: String) throws -> pid_t {
        let output = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(output) }
        return try Shell.spawn([Shell.pinpath] + arguments, stdout: output, stderr: output)
    }

    @Test("pinpath run --once: one probe.completed per hostile endpoint, each with its category, exit 1, in bounded time")
    func runOnce() async throws {
        let scene = try scene(interval: TestTime.yamlSeconds(10), timeout: TestTime.yamlSeconds(2))
        let outputPath = scene.configurationPath + ".out"
        let started = ContinuousClock.now
        let pid = try Self.spawn(["run", "--once", "--config", scene.configurationPath], output: outputPath)
        var status: Int32 = 0
        var exited = false
        while ContinuousClock.now - started < Self.bound {
            if waitpid(pid, &status, WNOHANG) == pid {
                exited = true
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        if !exited { Shell.kill(pid) }
        let elapsed = ContinuousClock.now - started
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        try #require(exited, "pinpath run --once did not exit within \(Self.bound): \(text)")
        print("pinpath run --once against \(scene.expected.count + 2) hostile endpoints exited \((status >> 8) & 0xff) after \(elapsed)")
        #expect(status & 0x7f == 0 && (status >> 8) & 0xff == 1, "exit status \(status): \(text)")

        let probes = Self.events(outputPath).filter { $0["event"] as? String == "probe.completed" }
        var categories: [String: String?] = [:]
        for probe in probes {
            guard let name = probe["endpoint"] as? String else { continue }
            #expect(categories[name] == nil, "two probe.completed for \(name)")
            categories[name] = probe["error_category"] as? String
            print("  \(name): \(probe["error_category"] as? String ?? "success") in \(probe["total_ms"] ?? "-") ms")
        }
        for (name, expected) in scene.expected {
            #expect(
                categories[name] == .some(expected), "\(name): \(String(describing: categories[name])), expected \(expected ?? "success")")
        }
        let switched = scene.switchingEndpoints.map { categories[$0] ?? "missing" }
        #expect(switched.contains(nil) && switched.contains("policy_rejected"), "switching server: \(switched)")
        #expect(probes.count == scene.expected.count + 2)
    }

    @Test("pinpath run keeps probing every hostile endpoint, stays small, and stops on SIGTERM")
    func keepsRunning() async throws {
        // Not scaled (see TestTime): the agent gives probes in flight at SIGTERM a fixed 2 s, so only a 2 s
        // timeout lets every probe end with its own category rather than `cancelled`.
        let scene = try scene(interval: "2s", timeout: "2s")
        let outputPath = scene.configurationPath + ".out"
        let pid = try Self.spawn(["run", "--config", scene.configurationPath], output: outputPath)
        var stopped = false
        defer { if !stopped { Shell.kill(pid) } }
        // Three rounds of probes: every endpoint is probed every 2 s, each probe ends within its 2 s timeout.
        try await Task.sleep(for: TestTime.scaled(.seconds(7)))
        var status: Int32 = 0
        #expect(waitpid(pid, &status, WNOHANG) == 0, "the agent exited: \(status)")
        let rss =
            (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.map(String.init) ?? "VmRSS: ?"
        let exit = try await Shell.stop(pid, signal: SIGTERM, timeout: TestTime.scaled(.seconds(5)))
        stopped = true
        #expect(exit == 0, "SIGTERM: exit \(String(describing: exit))")
        let probes = Self.events(outputPath).filter { $0["event"] as? String == "probe.completed" }
        var counts: [String: Int] = [:]
        for probe in probes {
            if let name = probe["endpoint"] as? String { counts[name, default: 0] += 1 }
            if let name = probe["endpoint"] as? String, let expected = scene.expected[name] {
                #expect(probe["error_category"] as? String == expected, "\(name)")
            }
        }
        let perEndpoint = "\(counts.values.min() ?? 0)–\(counts.values.max() ?? 0)"
        print("pinpath run for 7 s: \(probes.count) probes (\(perEndpoint) per endpoint), \(rss)")
        for name in Array(scene.expected.keys) + scene.switchingEndpoints {
            #expect((counts[name] ?? 0) >= 2, "\(name) was probed \(counts[name] ?? 0) times")
        }
    }
}
