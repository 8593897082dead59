import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Issue 11, rule 5: a redirect never weakens the request. Host A is 127.0.0.1, host B is ::1 (the test
/// PKI's `ip` leaf names both); each server records what it receives, so "nothing was sent" is checked at
/// the server, through the library (`Session`) and `pinpath request`.
@Suite("Redirect attacks", .serialized)
struct RedirectAttackTests {
    let pki = TestPKI.shared

    var ipLeaf: (leaf: String, key: String, chain: [String]) { (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]) }

    func tlsServer(_ address: String = "127.0.0.1") throws -> RecordingServer {
        try RecordingServer(address: address, certificate: ipLeaf, directory: pki.directory)
    }

    /// Pins that the `ip` chain does not have (another CA's intermediate and root).
    func wrongPins() throws -> SecurityPolicy {
        try SecurityPolicy(mode: .publicKey, pins: try pki.chain(["otherinter", "otherroot"]).map(\.spkiPin))
    }

    func rightPins() throws -> SecurityPolicy {
        try SecurityPolicy(mode: .publicKey, pins: try pki.chain(["inter", "root"]).map(\.spkiPin))
    }

    static func options() -> RequestOptions {
        var options = RequestOptions()
        // Only a bound against a hang: every assertion is about what was refused and what reached which server.
        // 10 s ran out twice on a machine with four builds beside the run.
        options.timeout = TestTime.scaled(.seconds(30))
        options.freshConnection = true
        return options
    }

    static func send(
        _ session: Session, _ url: String, method: RequestMethod = .get, headers: HeaderFields = [:], body: String? = nil,
        options: RequestOptions = options()
    ) async -> Result<SessionResponse, HTTPError> {
        var request = SessionRequest(method: method, url: URL(string: url)!, headers: headers)
        if let body { request.body = .bytes(Array(body.utf8)) }
        do throws(HTTPError) {
            return .success(try await session.send(request, options: options))
        } catch {
            return .failure(error)
        }
    }

    // MARK: 5a: each hop is held to its own host's policy

    /// Where host B's policy comes from: the session's per-host policies or the request's (the agent's way).
    enum PolicySource: String, CaseIterable, CustomTestStringConvertible {
        case session, requestOptions
        var testDescription: String { rawValue }
    }

    /// What B's policy gets wrong: its pins, or its CA file (which does not anchor B's chain).
    enum Mismatch: String, CaseIterable, CustomTestStringConvertible {
        case pins, caFile
        var testDescription: String { rawValue }
    }

    func hostBPolicy(_ mismatch: Mismatch?) throws -> HostPolicy {
        let pattern = try HostPattern(parsing: "::1")
        switch mismatch {
        case .pins: return HostPolicy(patterns: [pattern], policy: try wrongPins())
        case .caFile:
            return HostPolicy(
                patterns: [pattern], policy: try SecurityPolicy(mode: .none), trustStore: try TrustStore(caFile: pki.path("otherroot")))
        case nil: return HostPolicy(patterns: [pattern], policy: try rightPins(), trustStore: try pki.trustStore())
        }
    }

    @Test(
        "A redirect to host B is held to B's policy (pins, CA file): rejected, and B receives nothing",
        arguments: PolicySource.allCases, Mismatch.allCases)
    func hopUsesTargetHostPolicy(_ source: PolicySource, _ mismatch: Mismatch) async throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        var configuration = Session.Configuration(trustStore: try pki.trustStore())
        var options = Self.options()
        switch source {
        case .session: configuration.policies = HostPolicySet([try hostBPolicy(mismatch)])
        case .requestOptions: options.policies = HostPolicySet([try hostBPolicy(mismatch)])
        }
        let session = try Session(configuration)
        let result = await Self.send(session, a.redirect(302, to: "\(b.origin)/secret"), options: options)
        let expected: HTTPError.Code = mismatch == .pins ? .policyRejected : .tlsInvalid
        #expect(result.failure?.code == expected, "\(result)")
        #expect(a.requests.count == 1)
        #expect(b.requests.isEmpty, "B received \(b.requests.map(\.path))")
    }

    @Test(
        "A redirect to B's address spelled another way is still held to B's policy: rejected, B receives nothing",
        arguments: ["[0::1]", "[0:0:0:0:0:0:0:1]", "[::0:1]"])
    func hopSpellingCannotDodgePolicy(_ spelling: String) async throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        var options = Self.options()
        options.policies = HostPolicySet([try hostBPolicy(.pins)])
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        let result = await Self.send(session, a.redirect(302, to: "https://\(spelling):\(b.port)/secret"), options: options)
        #expect(result.failure?.code == .policyRejected, "\(result)")
        #expect(b.requests.isEmpty, "B received \(b.requests.map(\.path))")
    }

    @Test("Control: when B's policy accepts B, the same redirect is followed and B receives the request")
    func hopFollowedWhenPolicyAccepts() async throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        var options = Self.options()
        options.policies = HostPolicySet([try hostBPolicy(nil)])
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        let result = await Self.send(session, a.redirect(302, to: "\(b.origin)/final"), options: options)
        #expect(result.success?.statusCode == 200, "\(result)")
        #expect(result.success?.redirectCount == 1)
        #expect(b.requests.map(\.path) == ["/final"])
    }

    @Test("Two entries for B naming different trust stores: refused before connecting, B receives nothing")
    func conflictingStoresFailClosed() async throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        let pattern = try HostPattern(parsing: "::1")
        var options = Self.options()
        options.policies = HostPolicySet([
            HostPolicy(patterns: [pattern], policy: try SecurityPolicy(mode: .none), trustStore: try pki.trustStore()),
            HostPolicy(patterns: [pattern], policy: try rightPins(), trustStore: try TrustStore(caFile: pki.path("otherroot"))),
        ])
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        let result = await Self.send(session, a.redirect(302, to: "\(b.origin)/"), options: options)
        #expect(result.failure?.code == .policyRejected, "\(result)")
        #expect(result.failure?.message.contains("different trust stores") == true)
        #expect(b.requests.isEmpty)
    }

    // MARK: 5b: https never continues over http

    @Test(
        """
        A pinned https request answered by 307 to http: insecure_redirect, the http server receives nothing; followed only when \
        allowed, without credentials
        """
    )
    func httpsToHTTP() async throws {
        let a = try tlsServer()
        let plain = try RecordingServer(directory: pki.directory)
        defer {
            a.stop()
            plain.stop()
        }
        var configuration = Session.Configuration(trustStore: try pki.trustStore())
        configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: try rightPins())])
        let session = try Session(configuration)
        // Credentials by name's pattern too (`HeaderFields.isCredential`, the rule --effective redacts by).
        let headers: HeaderFields = [
            "Authorization": "Bearer secret", "X-Api-Key": "key", "X-Session-Id": "sid", "X-Upstream-Token": "tok", "X-Trace": "kept",
        ]
        let url = a.redirect(307, to: "\(plain.origin)/collect")

        let refused = await Self.send(session, url, method: .post, headers: headers, body: "card=4111")
        #expect(refused.failure?.code == .insecureRedirect, "\(refused)")
        #expect(refused.failure?.response?.statusCode == 307)
        #expect(a.requests.count == 1)
        #expect(plain.requests.isEmpty, "the http server received \(plain.requests.map(\.path))")

        var options = Self.options()
        options.allowsInsecureRedirects = true
        options.keepsHeadersAcrossOrigins = true  // even then, credentials do not go over http
        let followed = await Self.send(session, url, method: .post, headers: headers, body: "card=4111", options: options)
        #expect(followed.success?.statusCode == 200, "\(followed)")
        #expect(followed.success?.tls == nil)
        let received = try #require(plain.requests.first)
        #expect(received.method == "POST" && received.body == "card=4111")
        #expect(received.header("Authorization") == nil && received.header("X-Api-Key") == nil)
        #expect(received.header("X-Session-Id") == nil && received.header("X-Upstream-Token") == nil)
        #expect(received.header("X-Trace") == "kept", "--location-trusted keeps what is not a credential")
    }

    // MARK: 5c: another origin gets only the safe headers

    static let callerHeaders: HeaderFields = [
        "Authorization": "Bearer secret", "Cookie": "session=s", "Proxy-Authorization": "Basic cHJveHk6cHc=",
        "X-Api-Key": "key", "X-Custom": "mine", "Accept": "text/plain", "User-Agent": "attack-test",
    ]
    static let sensitive = ["Authorization", "Cookie", "Proxy-Authorization", "X-Api-Key", "X-Custom"]

    @Test("Cross-host redirect: B receives none of the caller's headers but the safe list; all with keepsHeadersAcrossOrigins")
    func crossHostHeaders() async throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        let stripped = await Self.send(session, a.redirect(302, to: "\(b.origin)/stripped"), headers: Self.callerHeaders)
        #expect(stripped.success?.statusCode == 200, "\(stripped)")
        let first = try #require(b.requests.first)
        for name in Self.sensitive { #expect(first.header(name) == nil, "\(name) reached host B") }
        #expect(first.header("Accept") == "text/plain" && first.header("User-Agent") == "attack-test")
        #expect(a.requests.first?.header("X-Api-Key") == "key", "host A itself got them")

        var options = Self.options()
        options.keepsHeadersAcrossOrigins = true
        _ = await Self.send(session, a.redirect(302, to: "\(b.origin)/trusted"), headers: Self.callerHeaders, options: options)
        let trusted = try #require(b.requests.last)
        #expect(trusted.path == "/trusted")
        for name in Self.sensitive { #expect(trusted.header(name) == Self.callerHeaders[name], "\(name)") }
    }

    @Test("A redirect to another origin that would send the body again is refused (cross_origin_body); B receives nothing")
    func crossOriginBody() async throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        let secret = "client_secret=s3cr3t-body"
        // 307 and 308 keep the method and the body; 301 and 302 keep them for every method but POST.
        for (status, method) in [(307, RequestMethod.post), (308, .put), (302, .put), (301, .patch)] {
            let result = await Self.send(session, a.redirect(status, to: "\(b.origin)/collect"), method: method, body: secret)
            #expect(result.failure?.code == .crossOriginBody, "\(status) \(method): \(result)")
            #expect(result.failure?.response?.statusCode == status)
        }
        #expect(b.requests.isEmpty, "host B received \(b.requests.map(\.path))")
        // A 302 of a POST becomes a GET without the body: followed. The same origin keeps the body.
        let get = await Self.send(session, a.redirect(302, to: "\(b.origin)/as-get"), method: .post, body: secret)
        #expect(get.success?.statusCode == 200, "\(get)")
        #expect(b.requests.last?.method == "GET" && b.requests.last?.body == "")
        let same = await Self.send(session, a.redirect(307, to: "\(a.origin)/same"), method: .post, body: secret)
        #expect(same.success?.statusCode == 200, "\(same)")
        #expect(a.requests.last?.path == "/same" && a.requests.last?.body == secret)
        // Trusted explicitly (--location-trusted): the body follows.
        var options = Self.options()
        options.keepsHeadersAcrossOrigins = true
        let trusted = await Self.send(session, a.redirect(307, to: "\(b.origin)/trusted"), method: .post, body: secret, options: options)
        #expect(trusted.success?.statusCode == 200, "\(trusted)")
        #expect(b.requests.last?.path == "/trusted" && b.requests.last?.body == secret)
    }

    @Test("Same-origin redirect keeps every header")
    func sameHostHeaders() async throws {
        let a = try tlsServer()
        defer { a.stop() }
        let session = try Session(Session.Configuration(trustStore: try pki.trustStore()))
        let result = await Self.send(session, a.redirect(302, to: "\(a.origin)/same"), headers: Self.callerHeaders)
        #expect(result.success?.statusCode == 200, "\(result)")
        let second = try #require(a.requests.last)
        #expect(second.path == "/same")
        for name in Self.sensitive { #expect(second.header(name) == Self.callerHeaders[name], "\(name)") }
    }

    // MARK: The same attacks through `pinpath request`

    func request(_ arguments: [String]) throws -> Shell.Result {
        try Shell.run([Shell.pinpath, "request", "--ca-file", pki.path("store"), "--timeout", "10"] + arguments)
    }

    @Test(
        """
        pinpath request: https → http exits 2 (insecure_redirect) and sends nothing; --allow-insecure-redirect follows, with the \
        body only if --location-trusted
        """
    )
    func requestCommandInsecureRedirect() throws {
        let a = try tlsServer()
        let plain = try RecordingServer(directory: pki.directory)
        defer {
            a.stop()
            plain.stop()
        }
        let pins = try pki.chain(["inter"]).map { "--pin=\($0.spkiPin)" }
        let url = a.redirect(307, to: "\(plain.origin)/collect")
        let refused = try request(pins + ["-d", "card=4111", "-H", "Authorization: Bearer secret", url])
        #expect(refused.status == 2, "\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("pinpath: error: insecure_redirect: "), "\(refused.stderr)")
        #expect(plain.requests.isEmpty)

        // The body would go to another origin as well: that needs --location-trusted too.
        let bodyRefused = try request(pins + ["--allow-insecure-redirect", "-d", "card=4111", url])
        #expect(bodyRefused.status == 2, "\(bodyRefused.stderr)")
        #expect(bodyRefused.stderr.hasPrefix("pinpath: error: cross_origin_body: "), "\(bodyRefused.stderr)")
        #expect(plain.requests.isEmpty)

        let followed = try request(
            pins + ["--allow-insecure-redirect", "--location-trusted", "-d", "card=4111", "-H", "Authorization: Bearer secret", url])
        #expect(followed.status == 0, "\(followed.stderr)")
        #expect(plain.requests.first?.body == "card=4111")
        #expect(plain.requests.first?.header("Authorization") == nil)
    }

    @Test("pinpath request: a cross-host redirect drops the caller's headers but the safe list; --location-trusted keeps them")
    func requestCommandHeaders() throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        let headers = Self.callerHeaders.flatMap { ["-H", "\($0.name): \($0.value)"] }
        let stripped = try request(headers + [a.redirect(302, to: "\(b.origin)/stripped")])
        #expect(stripped.status == 0, "\(stripped.stderr)")
        let first = try #require(b.requests.first)
        for name in Self.sensitive { #expect(first.header(name) == nil, "\(name) reached host B") }
        #expect(first.header("User-Agent") == "attack-test")

        let trusted = try request(headers + ["--location-trusted", a.redirect(302, to: "\(b.origin)/trusted")])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        let second = try #require(b.requests.last)
        for name in Self.sensitive { #expect(second.header(name) == Self.callerHeaders[name], "\(name)") }
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
    var success: Success? { if case .success(let value) = self { value } else { nil } }
}
