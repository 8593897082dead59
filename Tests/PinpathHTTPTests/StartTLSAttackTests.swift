import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Issue 25, section 2: a STARTTLS kind is trusted only once pinpath's own verifier accepted the handshake of
/// the very connection, and every failure says what went over the wire in plaintext. Against real servers on
/// loopback: Debian's slapd (LDAP, StartTLS and ldaps), hostile mail and FTP servers that accept STARTTLS and
/// then do not start TLS, and genuine ones.
@Suite("STARTTLS really starts TLS, or the probe says it did not", .serialized)
struct StartTLSAttackTests {
    let pki = TestPKI.shared

    func check(_ url: String) -> SessionRequest { SessionRequest(method: .get, url: URL(string: url)!) }

    func options() -> RequestOptions {
        var options = RequestOptions()
        options.timeout = .seconds(10)
        return options
    }

    /// The `ip` leaf (127.0.0.1) and its intermediate in one file, for servers that take the chain with the leaf.
    func ipChain() throws -> (chain: String, key: String) {
        let file = "\(pki.directory)/ip-chain-for-starttls.pem"
        try [pki.path("ip"), pki.path("inter")].map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: file, atomically: true, encoding: .utf8)
        return (file, pki.path("ip", "key"))
    }

    /// Sends a connection check to `url` and returns what came of it.
    func attempt(_ session: Session, _ url: String) async -> Result<SessionResponse, HTTPError> {
        do throws(HTTPError) { return .success(try await session.send(check(url), options: options())) } catch { return .failure(error) }
    }

    // MARK: LDAP

    @Test("Attack: Session refuses ldap:// (StartTLS) with the reason before connecting: slapd sees no connection")
    func sessionRefusesLDAP() async throws {
        let slapd = try SlapdServer(certificate: try ipChain(), directory: pki.directory)
        defer { slapd.stop() }
        let result = await attempt(try pki.loopbackSession(pins: ["inter"]), "ldap://127.0.0.1:\(slapd.ldapPort)")
        guard case .failure(let error) = result else {
            Issue.record("an ldap:// check was made: \(result)")
            return
        }
        #expect(error.code == .invalidURL, "\(error)")
        #expect(error.message.contains("never starts TLS after the server accepts StartTLS"), "\(error.message)")
        #expect(error.message.contains("use ldaps://") && error.message.contains("nothing was sent"), "\(error.message)")
        usleep(200_000)
        #expect(slapd.connections(to: slapd.ldapPort) == 0, "\(slapd.logText)")
    }

    @Test("Attack: pinpath request ldap:// is refused with the reason, exit 64, and slapd sees no connection")
    func requestCommandRefusesLDAP() throws {
        let slapd = try SlapdServer(certificate: try ipChain(), directory: pki.directory)
        defer { slapd.stop() }
        let result = try Shell.run([Shell.pinpath, "request", "--ca-file", pki.path("store"), "ldap://127.0.0.1:\(slapd.ldapPort)/"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("never starts TLS after the server accepts StartTLS"), "\(result.stderr)")
        #expect(result.stderr.contains("use ldaps://"), "\(result.stderr)")
        usleep(200_000)
        #expect(slapd.connections(to: slapd.ldapPort) == 0, "\(slapd.logText)")
    }

    /// What the refusal protects against, proven on this machine's libcurl: driven below the Session (which
    /// refuses the kind), libcurl's LDAP StartTLS goes on in plaintext after the server's success, so slapd
    /// reports a TLS negotiation failure while `ldapsearch -ZZ` gets TLS from the same server. The check that a
    /// verifier accepted this connection's handshake then refuses the connection and says what happened. If
    /// libcurl ever starts TLS here, this test fails: the refusal of ldap:// can then be reconsidered.
    @Test("libcurl's LDAP StartTLS never starts TLS (ldapsearch -ZZ does); the connection check refuses it and says so")
    func libcurlLDAPStartTLSStaysPlaintext() async throws {
        let slapd = try SlapdServer(certificate: try ipChain(), directory: pki.directory)
        defer { slapd.stop() }
        // The control: OpenLDAP's own client upgrades the same server's connection.
        let control = try Shell.run(
            [
                "/usr/bin/env", "LDAPTLS_CACERT=\(pki.path("store"))", "LDAPTLS_REQCERT=demand", "/usr/bin/ldapsearch", "-x", "-ZZ", "-H",
                "ldap://127.0.0.1:\(slapd.ldapPort)", "-b", "", "-s", "base", "namingContexts",
            ])
        #expect(control.status == 0, "ldapsearch -ZZ: \(control.stderr)")
        #expect(slapd.logText.components(separatedBy: "TLS established").count - 1 == 1, "\(slapd.logText)")

        let engine = try TransferEngine()
        defer { engine.stop() }
        let verifier = HandshakeVerifier(
            policy: try SecurityPolicy(mode: .none), host: "127.0.0.1", port: Int(slapd.ldapPort), trustStore: try pki.trustStore())
        let transfer = try Transfer(
            request: check("ldap://127.0.0.1:\(slapd.ldapPort)"), kind: .ldap, options: options(), verifier: verifier,
            clientCertificate: nil, addressCheck: nil, handles: engine.handles, headerLists: engine.headerLists)
        let result: Result<SessionResponse, HTTPError> = await withCheckedContinuation { continuation in
            transfer.completion = { continuation.resume(returning: $0) }
            engine.submit(transfer)
        }
        guard case .failure(let error) = result else {
            Issue.record("libcurl's LDAP StartTLS was admitted: \(result)")
            return
        }
        #expect(error.code == .tlsFailed, "\(error)")
        #expect(verifier.handshakesEvaluated == 0, "no certificate ever reached the verifier")
        #expect(
            error.message.contains("the server accepted StartTLS but libcurl never started TLS on the connection"), "\(error.message)")
        #expect(error.message.contains("went unprotected, in plaintext"), "\(error.message)")
        #expect(!error.message.contains("nothing was sent"), "\(error.message)")
        usleep(300_000)
        let log = slapd.logText
        #expect(slapd.connections(to: slapd.ldapPort) == 2, "\(log)")
        #expect(log.components(separatedBy: " STARTTLS\n").count - 1 == 2, "both clients asked for StartTLS: \(log)")
        #expect(log.contains("closed (TLS negotiation failure)"), "slapd received plaintext where TLS should start: \(log)")
        #expect(log.components(separatedBy: "TLS established").count - 1 == 1, "only ldapsearch's connection got TLS: \(log)")
    }

    @Test("ldaps:// against slapd: up with the right pins and the verified chain; a wrong pin is policy_rejected before any LDAP operation")
    func ldapsPinned() async throws {
        let slapd = try SlapdServer(certificate: try ipChain(), directory: pki.directory)
        defer { slapd.stop() }
        let url = "ldaps://127.0.0.1:\(slapd.ldapsPort)"
        let response = try await pki.loopbackSession(pins: ["inter"]).send(check(url), options: options())
        let tls = try #require(response.tls)
        #expect(tls.evaluation?.allowsConnection == true)
        #expect(tls.verifiedChainPins == (try pki.chain(["ip", "inter", "root"])).map(\.spkiPin.description))
        usleep(200_000)
        let operations = slapd.logText.split(separator: "\n").filter { $0.contains(" op=") }.count

        let refused = await attempt(try pki.loopbackSession(pins: ["otherroot"]), url)
        guard case .failure(let error) = refused else {
            Issue.record("a wrong pin was accepted: \(refused)")
            return
        }
        #expect(error.code == .policyRejected && error.evaluation?.failure?.reason == .pinMismatch, "\(error)")
        usleep(200_000)
        let log = slapd.logText
        #expect(slapd.connections(to: slapd.ldapsPort) == 2, "\(log)")
        #expect(log.split(separator: "\n").filter { $0.contains(" op=") }.count == operations, "no operation after the refusal: \(log)")
        #expect(log.components(separatedBy: "TLS established").count - 1 == 1, "\(log)")
    }

    // MARK: Hostile STARTTLS servers

    /// What each kind's client sends in plaintext, as the server logs it (first word, after IMAP's tag).
    static func plaintextVerbs(_ server: MailServer, _ service: MailServer.Service) -> [String] {
        server.plaintextCommands.map { line in
            let words = line.split(separator: " ")
            return String((service == .imap ? words.dropFirst() : words[...]).first ?? "")
        }
    }

    static let expectedPlaintext: [MailServer.Service: (verbs: [String], exchange: String, command: String)] = [
        .smtp: (["EHLO", "STARTTLS"], "the greeting, EHLO and STARTTLS", "STARTTLS"),
        .imap: (["CAPABILITY", "STARTTLS"], "the greeting, CAPABILITY and STARTTLS", "STARTTLS"),
        .pop3: (["CAPA", "STLS"], "the greeting, CAPA and STLS", "STLS"),
        .ftp: (["AUTH"], "the greeting and AUTH SSL (then AUTH TLS when refused)", "AUTH"),
    ]

    @Test(
        """
        Attack: a server that accepts STARTTLS and then talks plaintext, closes or sends garbage: tls_failed, the verifier \
        never ran, the message says what went in plaintext, and nothing but a ClientHello followed the command
        """,
        arguments: [MailServer.Service.smtp, .imap, .pop3, .ftp],
        [MailServer.Mode.upgradeThenPlaintext, .upgradeThenClose, .upgradeThenGarbage])
    func hostileUpgrade(_ service: MailServer.Service, _ mode: MailServer.Mode) async throws {
        let server = try MailServer(service, mode, directory: pki.directory)
        defer { server.stop() }
        let expected = try #require(Self.expectedPlaintext[service])
        let result = await attempt(try pki.loopbackSession(pins: ["inter"]), "\(service.rawValue)://127.0.0.1:\(server.port)")
        guard case .failure(let error) = result else {
            Issue.record("a connection that never started TLS was reported up: \(result)")
            return
        }
        #expect(error.code == .tlsFailed, "\(error)")
        #expect(error.evaluation == nil)
        #expect(
            error.message.contains(
                "the server accepted \(expected.command), then no TLS handshake completed, so pinpath's verifier never checked a certificate"
            ),
            "\(error.message)")
        #expect(
            error.message.contains(
                "in plaintext only \(expected.exchange) were exchanged, and after \(expected.command) nothing was sent but the start of a TLS handshake"
            ), "\(error.message)")
        #expect(!error.message.contains("nothing was sent;") && !error.message.contains("(nothing was sent)"), "\(error.message)")

        // The server's record agrees: the plaintext commands, then TLS handshake records only.
        for _ in 0..<100 where !server.betrayalDone { usleep(50_000) }
        #expect(Self.plaintextVerbs(server, service) == expected.verbs, "\(server.transcript)")
        if mode != .upgradeThenClose {
            let after = try #require(server.bytesAfterUpgrade, "\(server.transcript)")
            let records = MailServer.tlsRecordTypes(after)
            #expect(records?.first == 22, "a ClientHello first: \(after.prefix(16))")
            #expect(records?.allSatisfy { $0 == 22 || $0 == 21 } == true, "only handshake and alert records, no data: \(records ?? [])")
        }
    }

    @Test("A server that does not offer the upgrade: tls_failed, and the message says only the plaintext exchange took place")
    func upgradeNotOffered() async throws {
        for service in [MailServer.Service.smtp, .ftp] {
            let server = try MailServer(service, .nostarttls, directory: pki.directory)
            defer { server.stop() }
            let expected = try #require(Self.expectedPlaintext[service])
            let result = await attempt(try pki.loopbackSession(), "\(service.rawValue)://127.0.0.1:\(server.port)")
            guard case .failure(let error) = result else {
                Issue.record("\(service): probed without TLS: \(result)")
                return
            }
            #expect(error.code == .tlsFailed, "\(error)")
            #expect(
                error.message.contains(
                    "it stopped before any TLS upgrade: at most \(expected.exchange) were exchanged, in plaintext, and nothing more was sent"
                ),
                "\(error.message)")
            usleep(200_000)
            // FTP asks twice (AUTH SSL, then AUTH TLS), and nothing else: no USER, no PASS in plaintext.
            #expect(Self.plaintextVerbs(server, service) == (service == .ftp ? ["AUTH", "AUTH"] : ["EHLO"]), "\(server.transcript)")
        }
    }

    @Test("A wrong pin on a STARTTLS server: the message says only the plaintext exchange and the refused handshake took place")
    func wrongPinAccount() async throws {
        let server = try MailServer(.smtp, .starttls, certificate: try ipChain(), directory: pki.directory)
        defer { server.stop() }
        let result = await attempt(try pki.loopbackSession(pins: ["otherroot"]), "smtp://127.0.0.1:\(server.port)")
        guard case .failure(let error) = result else {
            Issue.record("a wrong pin was accepted: \(result)")
            return
        }
        #expect(error.code == .policyRejected, "\(error)")
        #expect(
            error.message.contains(
                "in plaintext only the greeting, EHLO and STARTTLS were exchanged, and after STARTTLS nothing was sent but the TLS handshake pinpath refused"
            ), "\(error.message)")
        usleep(200_000)
        #expect(server.commandsOverTLS.isEmpty, "\(server.transcript)")
    }

    // MARK: Genuine servers still pass

    @Test(
        "Genuine STARTTLS servers still pass, the verifier having accepted each connection's own handshake",
        arguments: [
            MailServer.Service.smtp, .imap, .pop3, .ftp,
        ])
    func genuineUpgrade(_ service: MailServer.Service) async throws {
        let server = try MailServer(service, .starttls, certificate: try ipChain(), directory: pki.directory)
        defer { server.stop() }
        let response = try await pki.loopbackSession(pins: ["inter"]).send(
            check("\(service.rawValue)://127.0.0.1:\(server.port)"), options: options())
        #expect(response.tls?.evaluation?.allowsConnection == true)
        #expect(response.tls?.verifiedChainPins.count == 3)
        usleep(200_000)
        #expect(Self.plaintextVerbs(server, service) == Self.expectedPlaintext[service]?.verbs, "\(server.transcript)")
        #expect(!server.commandsOverTLS.isEmpty, "libcurl's connect phase went on over TLS: \(server.transcript)")
    }
}
