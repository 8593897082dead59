import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// The connection-check kinds (`tls://`, `tcp://`, SMTP, IMAP and POP3 with STARTTLS or implicit TLS) through
/// the same session, gates and handshake verifier as https, against real servers on loopback: `openssl
/// s_server` with the test PKI, and the Python mail and banner servers of the test support.
@Suite("Probe kinds through the request core", .serialized)
struct ProbeKindsTests {
    let pki = TestPKI.shared

    /// `openssl s_server` for a leaf of the test PKI, issued by its intermediate.
    func server(_ leaf: String, issuer: String = "inter") throws -> TLSServer {
        try TLSServer(certificate: pki.path(leaf), key: pki.path(leaf, "key"), chain: [pki.path(issuer)], in: pki.directory)
    }

    /// A session trusting the test root; with `pins`, those pinned for 127.0.0.1.
    func session(pins: [String] = []) throws -> Session { try pki.loopbackSession(pins: pins) }

    func check(_ url: String) -> SessionRequest { SessionRequest(method: .get, url: URL(string: url)!) }

    func options(serverName: String? = nil, exchange: TCPExchange? = nil) -> RequestOptions {
        var options = RequestOptions()
        options.timeout = .seconds(10)
        options.serverName = serverName
        options.tcpExchange = exchange
        return options
    }

    /// The `ip` leaf's chain file (leaf, intermediate) for the Python servers.
    func mailChain() throws -> (chain: String, key: String) {
        let file = "\(pki.directory)/ip-chain-for-mail.pem"
        try [pki.path("ip"), pki.path("inter")].map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: file, atomically: true, encoding: .utf8)
        return (file, pki.path("ip", "key"))
    }

    static func code(_ error: any Error) -> HTTPError.Code? { (error as? HTTPError)?.code }

    // MARK: tls://

    @Test("tls:// completes a verified handshake: no status, the verified chain, resolve/connect/tls timings")
    func tlsGood() async throws {
        let server = try server("ip")
        defer { server.stop() }
        let response = try await session().send(check("tls://127.0.0.1:\(server.port)"), options: options())
        #expect(response.statusCode == 0)
        #expect(response.remoteAddress == "127.0.0.1:\(server.port)")
        let tls = try #require(response.tls)
        #expect(tls.version.hasPrefix("TLSv1."))
        #expect(tls.verifiedChainPins == (try pki.chain(["ip", "inter", "root"])).map(\.spkiPin.description))
        #expect(response.timings.tls > 0)
        #expect(ServiceKind.tls.phases == ["resolve", "connect", "tls"])
    }

    @Test("tls:// with a pin that matches nothing is refused in the handshake (policy_rejected)")
    func tlsPinMismatch() async throws {
        let server = try server("ip")
        defer { server.stop() }
        await #expect {
            _ = try await session(pins: ["otherroot"]).send(check("tls://127.0.0.1:\(server.port)"), options: options())
        } throws: { error in
            guard let error = error as? HTTPError, error.code == .policyRejected else { return false }
            // Where it connected, although refused: the address that served the wrong key, the version, the phases.
            #expect(error.remoteAddress == "127.0.0.1:\(server.port)")
            #expect(error.tlsVersion?.hasPrefix("TLSv1.") == true, "\(String(describing: error.tlsVersion))")
            #expect(error.timings?.phasesReached == ["resolve", "connect", "tls"])
            return error.evaluation?.failure?.reason == .pinMismatch
        }
        // The right pin passes on the same server.
        _ = try await session(pins: ["inter"]).send(check("tls://127.0.0.1:\(server.port)"), options: options())
    }

    @Test("tls:// to an expired certificate is refused as tls_expired")
    func tlsExpired() async throws {
        let server = try server("expired")
        defer { server.stop() }
        await #expect {
            _ = try await session().send(check("tls://127.0.0.1:\(server.port)"), options: options(serverName: "valid.test"))
        } throws: { Self.code($0) == .tlsExpired }
    }

    @Test("servername is the name checked: it passes with the right name and never excuses a wrong one")
    func tlsServerName() async throws {
        let valid = try server("valid")
        defer { valid.stop() }
        let response = try await session().send(check("tls://127.0.0.1:\(valid.port)"), options: options(serverName: "valid.test"))
        #expect(response.tls?.evaluation?.host == "valid.test")
        // Without it, the name checked is the URL's host (127.0.0.1), which valid.test's certificate does not name.
        await #expect {
            _ = try await session().send(check("tls://127.0.0.1:\(valid.port)"), options: options())
        } throws: { Self.code($0) == .tlsInvalid }
        // A certificate for another name is refused whatever the URL's host.
        let wrongHost = try server("wronghost")
        defer { wrongHost.stop() }
        await #expect {
            _ = try await session().send(check("tls://127.0.0.1:\(wrongHost.port)"), options: options(serverName: "valid.test"))
        } throws: { Self.code($0) == .tlsInvalid }
    }

    @Test("A tls:// or tcp:// URL without a port is refused before connecting")
    func portRequired() async throws {
        await #expect { _ = try await session().send(check("tls://127.0.0.1"), options: options()) } throws: {
            Self.code($0) == .invalidURL
        }
        await #expect { _ = try await session().send(check("tcp://127.0.0.1"), options: options()) } throws: {
            Self.code($0) == .invalidURL
        }
    }

    /// Only the success is asserted: under TLS 1.3 a server refuses a missing certificate after the client's
    /// side of the handshake is done, and a tls:// check, which reads nothing, does not see it (README).
    @Test("tls:// presents the request's client certificate to a server that requires one")
    func tlsClientCertificate() async throws {
        let clients = ClientCertificatePKI.shared
        let server = try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory,
            extraArguments: ["-Verify", "1", "-verify_return_error", "-CAfile", clients.path("client-ca")])
        defer { server.stop() }
        var withCertificate = options()
        withCertificate.clientCertificate = ClientCertificate(
            certificatePath: clients.path("client"), keyPath: clients.path("client-encrypted", "key"),
            password: ClientCertificatePKI.password)
        let response = try await session().send(check("tls://127.0.0.1:\(server.port)"), options: withCertificate)
        #expect(response.tls?.evaluation != nil)
    }

    // MARK: tcp://

    @Test("tcp:// connects only; with an exchange it reads the banner, or sends and reads the answer")
    func tcpBanner() async throws {
        let directory = pki.directory
        let greeter = try MailServer(.tcp, .greet, directory: directory)
        defer { greeter.stop() }
        let connected = try await session().send(check("tcp://127.0.0.1:\(greeter.port)"), options: options())
        #expect(connected.statusCode == 0 && connected.tls == nil && connected.banner == nil)
        let greeted = try await session().send(check("tcp://127.0.0.1:\(greeter.port)"), options: options(exchange: TCPExchange()))
        #expect(greeted.banner == "SSH-2.0-pinpath-test\r\n")

        let answerer = try MailServer(.tcp, .answer, directory: directory)
        defer { answerer.stop() }
        let answered = try await session().send(
            check("tcp://127.0.0.1:\(answerer.port)"),
            options: options(exchange: TCPExchange(send: Array("PING\r\n".utf8), readUntil: "+PONG")))
        #expect(answered.banner?.contains("+PONG PING") == true)
        #expect(answerer.transcript == ["plain PING"])
    }

    @Test("A tcp:// answer that never ends is cut at 4 KiB: the exchange stops reading, and the probe goes on")
    func tcpAnswerCapped() async throws {
        let server = try HostileServer(.hugeBody(announced: true))
        defer { server.stop() }
        let response = try await session().send(
            check("tcp://127.0.0.1:\(server.port)"),
            options: options(exchange: TCPExchange(send: Array("GET / HTTP/1.1\r\n\r\n".utf8), readUntil: "never sent")))
        let banner = try #require(response.banner)
        #expect(banner.utf8.count == TCPExchange.maximumBannerSize)
        #expect(banner.hasPrefix("HTTP/1.1 200 OK\r\n"))
    }

    @Test("A silent tcp:// server: the exchange ends at the request's deadline with timed_out; stopping the session ends one at once")
    func tcpSilentDeadline() async throws {
        let server = try HostileServer(.silent)
        defer { server.stop() }
        var shortOptions = options(exchange: TCPExchange())
        shortOptions.timeout = .seconds(1)
        let started = ContinuousClock.now
        await #expect {
            _ = try await session().send(check("tcp://127.0.0.1:\(server.port)"), options: shortOptions)
        } throws: { Self.code($0) == .timedOut }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(900) && waited < .seconds(5), "\(waited)")

        // An exchange still waiting when its session shuts down is answered, not left hanging.
        let stopping = try session()
        let (request, exchangeOptions) = (check("tcp://127.0.0.1:\(server.port)"), options(exchange: TCPExchange()))
        let probe = Task { try await stopping.send(request, options: exchangeOptions) }
        try await Task.sleep(for: .milliseconds(300))
        stopping.shutdown()
        await #expect { _ = try await probe.value } throws: { Self.code($0) == .cancelled }
    }

    @Test("Cancelling the task of a tcp:// exchange with a silent server ends it at once, cancelled, not at its deadline")
    func tcpExchangeCancelled() async throws {
        let server = try HostileServer(.silent)
        defer { server.stop() }
        var longOptions = options(exchange: TCPExchange(send: Array("ping\n".utf8), readUntil: "pong"))
        longOptions.timeout = .seconds(20)
        let session = try session()
        let request = check("tcp://127.0.0.1:\(server.port)")
        let probe = Task { try await session.send(request, options: longOptions) }
        try await Task.sleep(for: .milliseconds(500))  // connected, and waiting for the answer
        let cancelled = ContinuousClock.now
        probe.cancel()
        await #expect { _ = try await probe.value } throws: { Self.code($0) == .cancelled }
        let waited = ContinuousClock.now - cancelled
        #expect(waited < .seconds(5), "the exchange ended \(waited) after its task was cancelled")
    }

    @Test("tcp:// to a closed port fails to connect")
    func tcpRefused() async throws {
        let port = try TLSServer.freePort()
        await #expect {
            _ = try await session().send(check("tcp://127.0.0.1:\(port)"), options: options())
        } throws: { Self.code($0) == .connectFailed }
    }

    // MARK: STARTTLS and implicit TLS

    @Test("SMTP with STARTTLS: the greeting is the banner, the upgraded connection is verified, EHLO follows over TLS")
    func smtpStartTLS() async throws {
        let server = try MailServer(.smtp, .starttls, certificate: try mailChain(), directory: pki.directory)
        defer { server.stop() }
        let response = try await session(pins: ["inter"]).send(check("smtp://127.0.0.1:\(server.port)"), options: options())
        #expect(response.banner?.hasPrefix("220 mail.test ESMTP pinpath-test") == true)
        #expect(response.tls?.verifiedChainPins.count == 3)
        #expect(server.transcript.first == "plain EHLO" || server.transcript.first?.hasPrefix("plain EHLO ") == true)
        #expect(server.commandsOverTLS.count == 1 && server.commandsOverTLS[0].hasPrefix("EHLO"))
    }

    @Test("Attack: a STARTTLS server with a wrong-pin certificate is refused and receives no command after STARTTLS")
    func smtpWrongPinSendsNothingOverTLS() async throws {
        let server = try MailServer(.smtp, .starttls, certificate: try mailChain(), directory: pki.directory)
        defer { server.stop() }
        await #expect {
            _ = try await session(pins: ["otherroot"]).send(check("smtp://127.0.0.1:\(server.port)"), options: options())
        } throws: { error in
            guard let error = error as? HTTPError, error.code == .policyRejected else { return false }
            return error.evaluation?.failure?.reason == .pinMismatch
        }
        usleep(200_000)  // the server logs the client's alert
        #expect(server.commandsOverTLS.isEmpty, "no second EHLO, no MAIL FROM: \(server.transcript)")
        #expect(server.transcript.filter { $0.hasPrefix("plain ") }.map { $0.split(separator: " ")[1] } == ["EHLO", "STARTTLS"])
    }

    @Test("Attack: a server that does not offer STARTTLS fails (CURLUSESSL_ALL) and nothing continues in plaintext")
    func smtpWithoutStartTLS() async throws {
        let server = try MailServer(.smtp, .nostarttls, certificate: try mailChain(), directory: pki.directory)
        defer { server.stop() }
        await #expect {
            _ = try await session().send(check("smtp://127.0.0.1:\(server.port)"), options: options())
        } throws: { error in
            guard let error = error as? HTTPError else { return false }
            return error.code == .tlsFailed && error.message.contains("STARTTLS")
        }
        usleep(200_000)
        #expect(server.transcript.count == 1 && server.transcript[0].hasPrefix("plain EHLO"), "\(server.transcript)")
    }

    @Test("IMAP with STARTTLS: verified; with a wrong pin, no command after STARTTLS")
    func imapStartTLS() async throws {
        let server = try MailServer(.imap, .starttls, certificate: try mailChain(), directory: pki.directory)
        defer { server.stop() }
        let response = try await session(pins: ["inter"]).send(check("imap://127.0.0.1:\(server.port)"), options: options())
        #expect(response.banner?.hasPrefix("* OK") == true)
        #expect(response.tls?.evaluation != nil)
        #expect(server.commandsOverTLS.count == 1)
        await #expect {
            _ = try await session(pins: ["otherroot"]).send(check("imap://127.0.0.1:\(server.port)"), options: options())
        } throws: { Self.code($0) == .policyRejected }
        usleep(200_000)
        #expect(server.commandsOverTLS.count == 1, "\(server.transcript)")
    }

    @Test("POP3 with STLS is verified")
    func pop3StartTLS() async throws {
        let server = try MailServer(.pop3, .starttls, certificate: try mailChain(), directory: pki.directory)
        defer { server.stop() }
        let response = try await session().send(check("pop3://127.0.0.1:\(server.port)"), options: options())
        #expect(response.banner?.hasPrefix("+OK pinpath-test") == true)
        #expect(response.tls?.evaluation != nil)
    }

    @Test("Implicit TLS (smtps, imaps, pop3s) runs the same verifier", arguments: [MailServer.Service.smtp, .imap, .pop3])
    func implicitTLS(_ service: MailServer.Service) async throws {
        let server = try MailServer(service, .implicit, certificate: try mailChain(), directory: pki.directory)
        defer { server.stop() }
        let url = "\(service.rawValue)s://127.0.0.1:\(server.port)"
        let response = try await session(pins: ["inter"]).send(check(url), options: options())
        #expect(response.tls?.evaluation != nil && response.banner != nil)
        await #expect {
            _ = try await session(pins: ["otherroot"]).send(check(url), options: options())
        } throws: { Self.code($0) == .policyRejected }
    }
}
