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
    static let timeout = Duration.seconds(2)
    /// Scheduling slack on a shared two-core machine; a failure here is a hang, not jitter.
    static let margin = Duration.seconds(1)

    /// One hostile behaviour, the scheme to talk to it and the code the request must end with.
    enum Case: String, CaseIterable, CustomTestStringConvertible {
        case silent, slowloris, headerFlood, hugeBody, hugeChunkedBody, malformedStatusLine, notHTTP, oversizedHeader, resetMidResponse, tlsAlert, refuse

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
            case .headerFlood, .hugeBody, .hugeChunkedBody, .malformedStatusLine, .notHTTP, .oversizedHeader, .resetMidResponse: .protocolError
            case .tlsAlert: .tlsFailed
            case .refuse: .connectFailed
            }
        }
    }

    func session(pins: [String] = []) throws -> Session {
        var configuration = Session.Configuration(trustStore: try pki.trustStore())
        if !pins.isEmpty {
            let policy = try SecurityPolicy(mode: .publicKey, pins: try pki.chain(pins).map(\.spkiPin), requiresBackupPin: false)
            configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)])
        }
        return try Session(configuration)
    }

    static func options() -> RequestOptions {
        var options = RequestOptions()
        options.timeout = timeout
        options.connectTimeout = timeout
        options.freshConnection = true
        return options
    }

    /// Sends one GET; returns the error (nil on success), the response, and how long it took.
    static func attempt(_ session: Session, _ url: String) async -> (error: HTTPError?, response: HTTPResponse?, elapsed: Duration) {
        let started = ContinuousClock.now
        do throws(HTTPError) {
            let response = try await session.send(HTTPRequest(method: .get, url: URL(string: url)!), options: options())
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
            print("hostile hugeBody announced=\(announced): \(error?.code.description ?? "success") after \(elapsed), server sent \(server.bytesSent) bytes")
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

    @Test("HEAD of a 1 GiB resource is fine: the announced length of a body that is not sent is not a body")
    func headOfHugeBody() async throws {
        let server = try HostileServer(.hugeBody(announced: true), directory: pki.directory)
        defer { server.stop() }
        let response = try await session().send(
            HTTPRequest(method: .head, url: URL(string: "http://127.0.0.1:\(server.port)/")!), options: Self.options())
        #expect(response.statusCode == 200)
        #expect(response.headers["Content-Length"] == "\(1 << 30)")
    }

    @Test("A server sending 50 certificates: the chain is built from the ones that matter, or rejected as invalid")
    func fiftyCertificates() async throws {
        // 48 filler certificates after leaf and intermediate: the chain still builds to the test root.
        let padded = try HostileServer(
            .manyCertificates(goodIdentity, filler: HostileServer.fillerCertificates(count: 48, in: pki.directory)), directory: pki.directory)
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
        #expect(brokenError?.code == .tlsInvalid, "\(brokenError?.message ?? "no error")")
        #expect(brokenError?.evaluation?.servedChain.count == 50)
        #expect(brokenElapsed < Self.timeout + Self.margin)
        try await expectStillWorks(session)
    }

    @Test("A server that switches certificates between connections is checked on every connection")
    func switchingCertificates() async throws {
        let other = try Self.otherIPLeaf(pki)
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
        #expect(second?.code == .policyRejected, "\(second?.message ?? "no error")")
        #expect(second?.evaluation?.failure?.reason == .pinMismatch)
        #expect(elapsed < Self.timeout + Self.margin)
        #expect(server.connections == 2)
        let (third, _, _) = await Self.attempt(session, url)
        #expect(third == nil, "the third connection gets the pinned chain again: \(third?.message ?? "")")
    }

    /// A leaf for IP 127.0.0.1 under the other trusted root (`otherinter`): valid, but with different pins.
    static func otherIPLeaf(_ pki: TestPKI) throws -> (certificate: String, key: String) {
        let certificate = pki.file("otherip.pem"), key = pki.file("otherip.key")
        if !FileManager.default.fileExists(atPath: certificate) {
            try Shell.check([
                "/bin/bash", "-c",
                """
                set -e; cd "$1"
                openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out otherip.key
                openssl req -new -key otherip.key -subj /CN=OtherLoopback -out otherip.csr
                printf 'basicConstraints=CA:false\\nkeyUsage=digitalSignature\\nextendedKeyUsage=serverAuth\\nsubjectAltName=IP:127.0.0.1\\n' > otherip.ext
                openssl x509 -req -in otherip.csr -CA otherinter.pem -CAkey otherinter.key -CAcreateserial -days 365 -sha256 \
                  -extfile otherip.ext -out otherip.pem 2>/dev/null
                """,
                "otherip", pki.directory,
            ])
        }
        return (certificate, key)
    }
}
