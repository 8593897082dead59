import Foundation
import PinpathReachability
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// `tls://` and `tcp://` checks without a proxy run on the session's handshake engine (one thread, epoll, OpenSSL
/// driven directly on a shared context) instead of a libcurl transfer. Through `Session.send`, against real
/// servers on loopback: `openssl s_server`, the hostile kit's silent and garbage servers, the replay server.
@Suite("The handshake engine behind tls:// and tcp://", .serialized)
struct HandshakeEngineTests {
    let pki = TestPKI.shared

    func server(_ leaf: String = "ip", www: Bool = true, transcript: String? = nil) throws -> TLSServer {
        try TLSServer(
            certificate: pki.path(leaf), key: pki.path(leaf, "key"), chain: [pki.path("inter")], in: pki.directory, www: www,
            transcript: transcript)
    }

    func check(_ url: String) -> SessionRequest { SessionRequest(method: .get, url: URL(string: url)!) }

    func options(timeout: Duration = .seconds(20)) -> RequestOptions {
        var options = RequestOptions()
        options.timeout = timeout
        return options
    }

    static func code(_ error: any Error) -> HTTPError.Code? { (error as? HTTPError)?.code }

    /// Waits, bounded, until `condition` holds; whether it did.
    static func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    @Test("200 tls:// checks at once through one session: each verified, on one thread of the engine and one shared TLS context")
    func manyChecksOneThread() async throws {
        // Several servers: s_server handles one connection at a time.
        let servers = try (0..<4).map { _ in try server() }
        defer { for server in servers { server.stop() } }
        let session = try pki.loopbackSession(pins: ["inter"])
        defer { session.shutdown() }
        let requests = (0..<200).map { check("tls://127.0.0.1:\(servers[$0 % servers.count].port)") }
        let options = options()
        let verified = await withTaskGroup(of: Bool.self) { group in
            for request in requests {
                group.addTask {
                    // Verified, and its handshake timed: the tls phase is the handshake's own time, never 0.
                    let response = try? await session.send(request, options: options)
                    return response?.tls?.verifiedChainPins.count == 3 && response.map { $0.timings.tls > 0 } == true
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(verified == 200)
        #expect(session.handshakes.threadsStarted == 1, "the engine started \(session.handshakes.threadsStarted) threads")
        #expect(session.tlsContexts.contextsBuilt == 1, "\(session.tlsContexts.contextsBuilt) TLS contexts for one client identity")
        // A reload drops them: the next check builds its context again.
        session.reloadCheckContexts()
        _ = try await session.send(requests[0], options: options)
        #expect(session.tlsContexts.contextsBuilt == 2 && session.tlsContexts.count == 1)
    }

    @Test("A server that accepts TCP and never speaks TLS: timed_out at the deadline, connected but no tls phase")
    func silentServerTimesOut() async throws {
        let silent = try HostileServer(.silent)
        defer { silent.stop() }
        let started = ContinuousClock.now
        await #expect {
            _ = try await pki.loopbackSession().send(check("tls://127.0.0.1:\(silent.port)"), options: options(timeout: .seconds(1)))
        } throws: { error in
            guard let error = error as? HTTPError, error.code == .timedOut else { return false }
            #expect(error.remoteAddress == "127.0.0.1:\(silent.port)")
            #expect(error.timings?.phasesReached == ["resolve", "connect"])
            return true
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(900) && waited < .seconds(5), "\(waited)")
    }

    /// A hostile server's behaviour and the category a tls:// check of it ends with.
    struct Hostile: Sendable, CustomTestStringConvertible {
        let name: String
        let behaviour: HostileServer.Behaviour
        let expected: HTTPError.Code
        var testDescription: String { name }
    }

    static let hostile = [
        // Bytes that are not TLS ("HTTP/1.1 200 OK" and header lines, forever): OpenSSL's "wrong version number".
        Hostile(name: "garbage", behaviour: .slowloris, expected: .tlsFailed),
        Hostile(name: "fatal alert", behaviour: .tlsAlert, expected: .tlsFailed),
        // Reads the ClientHello as a request, then answers an HTTP status line.
        Hostile(name: "status line", behaviour: .malformedStatusLine("HTTP/1.1 two hundred OK"), expected: .tlsFailed),
        Hostile(name: "refused", behaviour: .refuse, expected: .connectFailed),
    ]

    @Test("Attack: a hostile server ends a tls:// check in its category within the deadline; the session goes on", arguments: hostile)
    func hostileServers(_ hostile: Hostile) async throws {
        let attacker = try HostileServer(hostile.behaviour, directory: pki.directory)
        defer { attacker.stop() }
        let session = try pki.loopbackSession()
        defer { session.shutdown() }
        let started = ContinuousClock.now
        await #expect {
            _ = try await session.send(check("tls://127.0.0.1:\(attacker.port)"), options: options(timeout: .seconds(1)))
        } throws: { error in
            guard let error = error as? HTTPError, error.code == hostile.expected else { return false }
            if hostile.name == "garbage" { #expect(error.message.contains("does not speak TLS"), "\(error.message)") }
            return error.evaluation == nil
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        let good = try server()
        defer { good.stop() }
        #expect(try await session.send(check("tls://127.0.0.1:\(good.port)"), options: options()).tls?.evaluation != nil)
    }

    @Test("A server sending 50 certificates: verified from the ones that matter; 50 unrelated ones are tls_invalid")
    func fiftyCertificates() async throws {
        let identity = HostileServer.TLSIdentity(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")])
        let padded = try HostileServer(
            .manyCertificates(identity, filler: HostileServer.fillerCertificates(count: 48, in: pki.directory)), directory: pki.directory)
        defer { padded.stop() }
        let session = try pki.loopbackSession()
        defer { session.shutdown() }
        let evaluation = try #require(try await session.send(check("tls://127.0.0.1:\(padded.port)"), options: options()).tls?.evaluation)
        #expect(evaluation.servedChain.count == 50 && evaluation.verifiedChain.count == 3)
        var unrelated = identity
        unrelated.chain = []
        let broken = try HostileServer(
            .manyCertificates(unrelated, filler: HostileServer.fillerCertificates(count: 49, in: pki.directory)), directory: pki.directory)
        defer { broken.stop() }
        await #expect {
            _ = try await session.send(check("tls://127.0.0.1:\(broken.port)"), options: options())
        } throws: { Self.code($0) == .tlsInvalid }
    }

    @Test("A check cancelled mid-handshake ends at once, cancelled, and closes its socket (the server sees it go)")
    func cancelClosesSocket() async throws {
        let silent = try HostileServer(.silent)
        defer { silent.stop() }
        let session = try pki.loopbackSession()
        defer { session.shutdown() }
        let request = check("tls://127.0.0.1:\(silent.port)")
        let options = options()
        let probe = Task { try await session.send(request, options: options) }
        #expect(await Self.eventually { silent.connections == 1 && silent.openSockets == 1 }, "connected, ClientHello sent")
        let cancelled = ContinuousClock.now
        probe.cancel()
        await #expect { _ = try await probe.value } throws: { Self.code($0) == .cancelled }
        #expect(ContinuousClock.now - cancelled < .seconds(2))
        #expect(await Self.eventually { silent.openSockets == 0 }, "the client's socket is still open: \(silent.openSockets)")
    }

    @Test("Shutting the session down with checks in flight ends each one cancelled and closes every socket; later checks fail at once")
    func shutdownWithChecksInFlight() async throws {
        let silent = try HostileServer(.silent)
        defer { silent.stop() }
        let session = try pki.loopbackSession()
        let request = check("tls://127.0.0.1:\(silent.port)")
        let tcpRequest = check("tcp://127.0.0.1:\(silent.port)")
        var withExchange = options()
        withExchange.tcpExchange = TCPExchange()
        let options = options()
        let exchange = withExchange
        let probes = (0..<20).map { index in
            let (sent, sentOptions) = index % 2 == 0 ? (request, options) : (tcpRequest, exchange)
            return Task { try await session.send(sent, options: sentOptions) }
        }
        #expect(await Self.eventually { silent.openSockets == 20 }, "\(silent.openSockets) connected")
        session.shutdown()
        for probe in probes {
            await #expect { _ = try await probe.value } throws: { Self.code($0) == .cancelled }
        }
        #expect(await Self.eventually { silent.openSockets == 0 }, "\(silent.openSockets) sockets left open")
        await #expect { _ = try await session.send(request, options: options) } throws: { Self.code($0) == .cancelled }
    }

    @Test("Attack: a refused tls:// handshake writes nothing after it; the server never sees application data from a check")
    func nothingWrittenAfterRefusal() async throws {
        let transcript = "\(pki.directory)/engine-transcript-\(UUID().uuidString)"
        let echo = try server(www: false, transcript: transcript)
        defer { echo.stop() }
        await #expect {
            _ = try await pki.loopbackSession(pins: ["otherroot"]).send(check("tls://127.0.0.1:\(echo.port)"), options: options())
        } throws: { Self.code($0) == .policyRejected }
        // The right pin: a completed handshake, and still nothing sent over it.
        _ = try await pki.loopbackSession(pins: ["inter"]).send(check("tls://127.0.0.1:\(echo.port)"), options: options())
        try await Task.sleep(for: .milliseconds(300))
        #expect(try String(contentsOfFile: transcript, encoding: .utf8).isEmpty, "s_server printed what a client sent")
    }

    @Test("Attack: an expired certificate replayed without its key over tls:// is tls_invalid, the missing proof named")
    func replayedExpiryUnproven() async throws {
        let replay = try ReplayTLSServer(chain: [pki.path("expired"), pki.path("inter")], tls13: true, in: pki.directory)
        defer { replay.stop() }
        var options = options(timeout: .seconds(5))
        options.serverName = "valid.test"
        await #expect {
            _ = try await pki.loopbackSession().send(check("tls://127.0.0.1:\(replay.port)"), options: options)
        } throws: { error in
            guard let error = error as? HTTPError, error.code == .tlsInvalid else { return false }
            return error.message.contains("did not prove it holds the key of the expired certificate")
        }
        #expect(replay.connections == 2, "the refused handshake, then the proof's second one")
    }

    @Test("resolved addresses and ip_family pick the address dialled; the name checked stays the URL's")
    func addressesAndFamilies() async throws {
        let valid = try server("valid")
        defer { valid.stop() }
        var pinned = options()
        pinned.resolvedAddresses = [ResolvedAddress(host: "valid.test", port: Int(valid.port), address: IPAddress("127.0.0.1")!)]
        let response = try await pki.loopbackSession().send(check("tls://valid.test:\(valid.port)"), options: pinned)
        #expect(response.remoteAddress == "127.0.0.1:\(valid.port)" && response.tls?.evaluation?.host == "valid.test")

        let tcp = check("tcp://localhost:\(valid.port)")
        var ipv4 = options()
        ipv4.ipFamily = .ipv4
        #expect(try await pki.loopbackSession().send(tcp, options: ipv4).remoteAddress == "127.0.0.1:\(valid.port)")
        var ipv6 = options()
        ipv6.ipFamily = .ipv6
        await #expect { _ = try await pki.loopbackSession().send(tcp, options: ipv6) } throws: { error in
            // Over IPv6 only, localhost is ::1, where nothing listens.
            guard let error = error as? HTTPError else { return false }
            return (error.code == .connectFailed && error.message.contains("::1")) || error.code == .resolveFailed
        }
        var wrongFamily = options()
        wrongFamily.ipFamily = .ipv6
        await #expect {
            _ = try await pki.loopbackSession().send(check("tcp://127.0.0.1:\(valid.port)"), options: wrongFamily)
        } throws: { Self.code($0) == .connectFailed }
    }

    @Test("Attack: a port past 65535 is refused invalid_url before any socket; nothing reaches the port it would wrap to")
    func portPastRangeRefused() async throws {
        let listener = try HostileServer(.silent)
        defer { listener.stop() }
        let session = try pki.loopbackSession()
        defer { session.shutdown() }
        for scheme in ["tls", "tcp"] {
            await #expect {
                _ = try await session.send(check("\(scheme)://127.0.0.1:\(Int(listener.port) + 65536)"), options: options())
            } throws: { error in
                Self.code(error) == .invalidURL && (error as? HTTPError)?.message.contains("out of range") == true
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(listener.connections == 0, "a check reached port \(listener.port)")
    }

    @Test("Attack: a host whose percent-decoding holds a line break is escaped in the resolver's refusal")
    func decodedHostEscaped() async throws {
        let session = try pki.loopbackSession()
        defer { session.shutdown() }
        for scheme in ["tls", "tcp"] {
            await #expect {
                _ = try await session.send(check("\(scheme)://forged%0Aline.invalid:443"), options: options(timeout: .seconds(5)))
            } throws: { error in
                guard let error = error as? HTTPError else { return false }
                return error.code == .resolveFailed && !error.message.contains("\n") && error.message.contains("forged\\x0aline")
            }
        }
    }
}
