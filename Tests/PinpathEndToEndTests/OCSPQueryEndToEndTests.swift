import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// `revocation: ocsp` through the library's `Session`: `openssl s_server` serves ``OCSPResponderPKI``'s leaves
/// without a staple, and the handshake asks the responder each leaf names (a real `openssl ocsp`, a closed
/// port, or a canned server playing forger, replayer, flooder, sloth or redirector). Servers that must be
/// refused echo what clients send into a transcript, which must stay free of any request: the refusal happens
/// inside the handshake, before a request byte.
@Suite("OCSP queries end to end", .serialized)
struct OCSPQueryEndToEndTests {
    let pki: OCSPResponderPKI

    init() throws { pki = try #require(OCSPResponderPKI.shared) }

    /// A server for `leaf` (chain: `inter`), echoing what clients send into a transcript unless `www`.
    func server(_ leaf: String, www: Bool = false, tls12: Bool = false) throws -> (TLSServer, transcript: String) {
        let transcript = pki.file("transcript-\(UUID().uuidString)")
        let server = try TLSServer(
            certificate: pki.file("\(leaf).pem"), key: pki.file("\(leaf).key"), chain: [pki.file("inter.pem")],
            in: pki.directory, www: www, transcript: www ? nil : transcript, extraArguments: tls12 ? ["-tls1_2"] : [])
        return (server, transcript)
    }

    static func received(_ transcript: String) -> String { (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? "" }

    /// One GET to 127.0.0.1:`port` whose host policy is `revocation: ocsp` (hard fail unless `softFail`),
    /// trusting the PKI's root, through `session` (a new one by default); with `check`, a `tls://` check instead.
    func send(
        port: UInt16, softFail: Bool = false, session: Session? = nil, timeout: Duration = .seconds(16), check: Bool = false
    ) async throws -> Result<SessionResponse, HTTPError> {
        let policy = try SecurityPolicy(mode: .none, revocation: .ocsp, ocspSoftFail: softFail)
        let session = try session ?? Self.session(policy: policy)
        var options = RequestOptions()
        options.timeout = TestTime.scaled(timeout)
        options.freshConnection = true
        options.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)])
        let request = SessionRequest(method: .get, url: URL(string: check ? "tls://127.0.0.1:\(port)" : "https://127.0.0.1:\(port)/")!)
        do throws(HTTPError) {
            return .success(try await session.send(request, options: options))
        } catch {
            return .failure(error)
        }
    }

    static func session(policy: SecurityPolicy) throws -> Session {
        try Session(Session.Configuration(trustStore: try #require(OCSPResponderPKI.shared).trustStore()))
    }

    @Test("a leaf the responder says is good: the request goes through, the status recorded with its nextUpdate")
    func good() async throws {
        let (server, _) = try server("good", www: true)
        defer { server.stop() }
        let response = try await send(port: server.port).get()
        #expect(response.statusCode == 200)
        let check = try #require(response.tls?.evaluation?.ocspCheck)
        #expect(check.status == .good)
        #expect(!check.stapled)
        #expect(check.responderURL?.absoluteString == "http://127.0.0.1:\(pki.responderPort)/")
        let nextUpdate = try #require(check.nextUpdate)
        #expect(nextUpdate > Date().addingTimeInterval(20 * 3600))
    }

    /// A leaf whose handshake must be refused under hard fail, and the reason and message part expected.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var leaf: String
        var reason: String
        var status: OCSPCheck.Status
        var messagePart: String
        var testDescription: String { leaf }
    }

    static let refusals = [
        Refusal(leaf: "revoked", reason: "revoked", status: .revoked, messagePart: "says it was revoked at "),
        Refusal(leaf: "unknown", reason: "ocsp_status_unknown", status: .unknown, messagePart: "is unknown"),
        Refusal(leaf: "unreachable", reason: "ocsp_unavailable", status: .unavailable, messagePart: "could not be asked"),
        Refusal(leaf: "noaia", reason: "ocsp_unavailable", status: .unavailable, messagePart: "names no OCSP responder"),
        Refusal(
            leaf: "forged", reason: "ocsp_unavailable", status: .unavailable,
            messagePart: "its signature is not the issuer's (CN=OCSP Test Intermediate) nor a delegated responder's"),
        Refusal(leaf: "othercert", reason: "ocsp_unavailable", status: .unavailable, messagePart: "is not about CN=valid.test"),
        Refusal(leaf: "stale", reason: "ocsp_unavailable", status: .unavailable, messagePart: "it expired at 2020-01-01"),
        Refusal(leaf: "replayed", reason: "ocsp_unavailable", status: .unavailable, messagePart: "a replayed answer"),
        Refusal(leaf: "huge", reason: "ocsp_unavailable", status: .unavailable, messagePart: "larger than 65536 bytes"),
        Refusal(leaf: "slow", reason: "ocsp_unavailable", status: .unavailable, messagePart: "timed out"),
        Refusal(leaf: "redirect", reason: "ocsp_unavailable", status: .unavailable, messagePart: "HTTP 302 (a redirect"),
        Refusal(leaf: "error", reason: "ocsp_unavailable", status: .unavailable, messagePart: "HTTP 500"),
    ]

    @Test("hard fail: the handshake refuses with the OCSP reason, and the server gets no request byte", arguments: refusals)
    func refuses(_ refusal: Refusal) async throws {
        let (server, transcript) = try server(refusal.leaf)
        defer { server.stop() }
        switch try await send(port: server.port) {
        case .success(let response):
            Issue.record("accepted: status \(response.statusCode)")
        case .failure(let error):
            #expect(error.code == (refusal.reason == "revoked" ? .revoked : .tlsInvalid), "\(error.code): \(error.message)")
            #expect(error.evaluation?.failure?.reason.description == refusal.reason, "\(error.message)")
            #expect(error.evaluation?.ocspCheck?.status == refusal.status, "\(error.message)")
            #expect(error.message.contains(refusal.messagePart), "\(error.message)")
        }
        #expect(Self.received(transcript).isEmpty, "the server received: \(Self.received(transcript))")
    }

    @Test(
        "tls:// on the handshake engine: the responder is asked and the check connects again; good passes, revoked is refused",
        arguments: ["good", "revoked"])
    func tlsCheck(_ leaf: String) async throws {
        let (server, transcript) = try server(leaf)
        defer { server.stop() }
        switch try await send(port: server.port, check: true) {
        case .success(let response):
            #expect(leaf == "good", "accepted")
            #expect(response.tls?.evaluation?.ocspCheck?.status == .good && response.tls?.evaluation?.ocspCheck?.stapled == false)
        case .failure(let error):
            #expect(leaf == "revoked" && error.code == .revoked, "\(error.code): \(error.message)")
            #expect(error.evaluation?.ocspCheck?.status == .revoked)
        }
        #expect(Self.received(transcript).isEmpty, "the server received: \(Self.received(transcript))")
    }

    @Test("TLS 1.2: a revoked leaf is refused in the status callback too, before any request byte")
    func revokedOverTLS12() async throws {
        let (server, transcript) = try server("revoked", tls12: true)
        defer { server.stop() }
        guard case .failure(let error) = try await send(port: server.port) else {
            Issue.record("a revoked leaf was accepted over TLS 1.2")
            return
        }
        #expect(error.code == .revoked, "\(error.code): \(error.message)")
        #expect(Self.received(transcript).isEmpty, "the server received: \(Self.received(transcript))")
    }

    @Test(
        "soft fail: an unusable responder lets the request through, reported as unavailable; revoked and unknown still refuse",
        arguments: refusals)
    func softFail(_ refusal: Refusal) async throws {
        let unavailable = refusal.status == .unavailable
        let (server, transcript) = try server(refusal.leaf, www: unavailable)
        defer { server.stop() }
        let result = try await send(port: server.port, softFail: true)
        if unavailable {
            let response = try result.get()
            #expect(response.statusCode == 200)
            let check = try #require(response.tls?.evaluation?.ocspCheck)
            #expect(check.status == .unavailable)
            #expect(check.softFailed)
            #expect(check.detail?.contains(refusal.messagePart) == true, "\(check.detail ?? "")")
        } else {
            guard case .failure(let error) = result else {
                Issue.record("accepted under soft fail: \(result)")
                return
            }
            #expect(error.evaluation?.failure?.reason.description == refusal.reason, "\(error.message)")
            #expect(Self.received(transcript).isEmpty)
        }
    }

    @Test("an answer is cached until its nextUpdate: a session asks the responder once for repeated handshakes")
    func cached() async throws {
        let (server, _) = try server("counted", www: true)
        defer { server.stop() }
        let policy = try SecurityPolicy(mode: .none, revocation: .ocsp)
        let session = try Self.session(policy: policy)
        let before = pki.cannedHits("counted")
        for _ in 0..<3 {
            let response = try await send(port: server.port, session: session).get()
            #expect(response.tls?.evaluation?.ocspCheck?.status == .good)
        }
        #expect(pki.cannedHits("counted") - before == 1)
        #expect(session.ocspResponses.count == 1)
    }

    @Test("a staple that answers takes precedence: with a good staple the responder is not asked")
    func stapleFirst() async throws {
        // `othercert.ocsp` is the responder's genuine "good" about `good`: stapled by `good`'s server, it answers.
        let server = try TLSServer(
            certificate: pki.file("good.pem"), key: pki.file("good.key"), chain: [pki.file("inter.pem")], in: pki.directory,
            extraArguments: ["-status_file", pki.file("othercert.ocsp")])
        defer { server.stop() }
        let session = try Self.session(policy: try SecurityPolicy(mode: .none, revocation: .ocsp))
        let response = try await send(port: server.port, session: session).get()
        let check = try #require(response.tls?.evaluation?.ocspCheck)
        #expect(check.status == .good)
        #expect(check.stapled)
        #expect(session.ocspResponses.count == 0)
    }

    // MARK: pinpath request

    func request(_ port: UInt16, _ extra: [String]) throws -> Shell.Result {
        try Shell.run(
            [Shell.pinpath, "request", "https://127.0.0.1:\(port)/", "--ca-file", pki.file("root.pem"), "--timeout", "16"] + extra)
    }

    @Test("pinpath request --ocsp: good passes; revoked exits 2 with category revoked and sends nothing; unreachable exits 2")
    func requestCommand() throws {
        let (good, _) = try server("good", www: true)
        defer { good.stop() }
        let accepted = try request(good.port, ["--ocsp", "--json"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stdout.contains(#""ocsp_status":"good""#), "\(accepted.stdout)")

        let (revoked, transcript) = try server("revoked")
        defer { revoked.stop() }
        let refused = try request(revoked.port, ["--ocsp"])
        #expect(refused.status == 2, "exit \(refused.status): \(refused.stderr)")
        #expect(refused.stderr.contains("revoked: ") && refused.stderr.contains("says it was revoked at"), "\(refused.stderr)")
        #expect(Self.received(transcript).isEmpty, "the server received: \(Self.received(transcript))")

        let (unreachable, _) = try server("unreachable", www: true)
        defer { unreachable.stop() }
        let hard = try request(unreachable.port, ["--ocsp"])
        #expect(hard.status == 2, "exit \(hard.status): \(hard.stderr)")
        #expect(hard.stderr.contains("soft_fail: false") && hard.stderr.contains("could not be asked"), "\(hard.stderr)")
    }

    @Test("pinpath request --ocsp --ocsp-soft-fail: an unreachable responder lets the request through with a warning")
    func requestCommandSoftFail() throws {
        let (server, _) = try server("unreachable", www: true)
        defer { server.stop() }
        let result = try request(server.port, ["--ocsp", "--ocsp-soft-fail"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("pinpath: warning: the revocation status of the server's certificate is unavailable")
                && result.stderr.contains("could not be asked"), "\(result.stderr)")
    }

    @Test(
        "pinpath request: --ocsp-soft-fail without OCSP, and --ocsp against another --revocation, are usage errors (64)",
        arguments: [["--ocsp-soft-fail"], ["--ocsp", "--revocation", "stapled"], ["--revocation", "stapled", "--ocsp-soft-fail"]])
    func requestCommandUsage(_ arguments: [String]) throws {
        let result = try request(1, arguments)
        #expect(result.status == 64, "\(arguments): exit \(result.status): \(result.stderr)")
        #expect(result.stderr.contains("--ocsp"), "\(result.stderr)")
    }

    // MARK: pinpath verify and audit

    /// `leaf` followed by `inter`, as a server would send them, in a file.
    func chainFile(_ leaf: String) throws -> String {
        let path = pki.file("chain-\(leaf)-\(UUID().uuidString).pem")
        let text =
            try String(contentsOfFile: pki.file("\(leaf).pem"), encoding: .utf8)
            + String(contentsOfFile: pki.file("inter.pem"), encoding: .utf8)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test(
        "pinpath verify --ocsp: good 0, revoked 2 (result revoked), unknown and unreachable 2, unreachable with --ocsp-soft-fail 0 with a warning",
        arguments: [
            ("good", [], 0, "good (OCSP, from the responder http://127.0.0.1:"),
            ("revoked", [], 2, "says it was revoked at"),
            ("unknown", [], 2, "is unknown"),
            ("unreachable", [], 2, "could not be asked"),
            ("unreachable", ["--ocsp-soft-fail"], 0, "WARNING: soft fail let it pass"),
        ] as [(String, [String], Int32, String)])
    func verifyCommand(_ leaf: String, _ extra: [String], _ status: Int32, _ part: String) throws {
        let result = try Shell.run(
            [Shell.pinpath, "verify", try chainFile(leaf), "--host", "valid.test", "--ca-file", pki.file("root.pem"), "--ocsp"]
                + extra)
        #expect(result.status == status, "\(leaf) \(extra): exit \(result.status): \(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains(part), "\(result.stdout)")
        if leaf == "revoked" { #expect(result.stdout.contains("result     revoked (exit 2)"), "\(result.stdout)") }
    }

    @Test("pinpath audit --ocsp --json: a revoked leaf is result revoked with the OCSP status, a good one trusted")
    func auditCommand() throws {
        let (revoked, _) = try server("revoked", www: true)
        defer { revoked.stop() }
        let (good, _) = try server("good", www: true)
        defer { good.stop() }
        let result = try Shell.run(
            [
                Shell.pinpath, "audit", "127.0.0.1:\(revoked.port)", "127.0.0.1:\(good.port)", "--ca-file", pki.file("root.pem"),
                "--ocsp", "--json",
            ])
        #expect(result.status == 2, "exit \(result.status): \(result.stdout) \(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        let objects = try #require(summary["audits"] as? [[String: Any]], "\(summary)")
        let byPort = Dictionary(uniqueKeysWithValues: objects.compactMap { object in (object["port"] as? Int).map { ($0, object) } })
        let revokedAudit = try #require(byPort[Int(revoked.port)], "\(result.stdout)")
        #expect(revokedAudit["result"] as? String == "revoked")
        #expect((revokedAudit["ocsp"] as? [String: Any])?["status"] as? String == "revoked", "\(revokedAudit)")
        let goodAudit = try #require(byPort[Int(good.port)], "\(result.stdout)")
        #expect(goodAudit["result"] as? String == "trusted")
        #expect((goodAudit["ocsp"] as? [String: Any])?["status"] as? String == "good", "\(goodAudit)")
    }
}
