import COpenSSL
import Foundation
import PinpathHTTP
import PinpathSecurity
import PinpathTestSupport
import Synchronization
import Testing

/// Issue 32, items 1 and 3: `Session.stream` against a real server on loopback (``BodyServer``), plain and over
/// https with a pin; its body, back-pressure, deadlines, failures, release, and progress.
@Suite("Streamed response bodies", .serialized)
struct StreamedBodyTests {
    let pki = TestPKI.shared

    /// The body server with the `ip` leaf (SAN IP:127.0.0.1) signed by the test intermediate, or plain http.
    func server(tls: Bool = true) throws -> BodyServer {
        try BodyServer(
            certificate: tls ? (leaf: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")]) : nil,
            directory: pki.directory)
    }

    /// A session pinning the test intermediate for 127.0.0.1 (and `extra` policies).
    func session(pins: [String] = ["inter"], extra: [HostPolicy] = []) throws -> Session {
        let policy = try SecurityPolicy(mode: .publicKey, pins: try pki.chain(pins).map(\.spkiPin), requiresBackupPin: false)
        var configuration = Session.Configuration(trustStore: try pki.trustStore())
        configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)] + extra)
        return try Session(configuration)
    }

    func get(_ url: String) -> SessionRequest { SessionRequest(method: .get, url: URL(string: url)!) }

    /// Reads a whole stream, hashing it; `pause` is called after each chunk (a slow consumer).
    func drain(_ body: ResponseBodyStream, pause: (Int64) async -> Void = { _ in }) async throws -> (count: Int64, sha256: String) {
        var digest = SHA256Digest()
        var count: Int64 = 0
        for try await chunk in body {
            #expect(!chunk.isEmpty)
            digest.update(chunk)
            count += Int64(chunk.count)
            await pause(count)
        }
        return (count, digest.hex())
    }

    @Test("A plain and a pinned https body arrive whole, by Content-Length and chunked, with the server's SHA-256")
    func wholeBody() async throws {
        for tls in [false, true] {
            let server = try server(tls: tls)
            defer { server.stop() }
            let session = try session()
            defer { session.shutdown() }
            for query in ["n=5000000", "n=3000001&chunked=1", "n=0"] {
                let response = try await session.stream(get("\(server.origin)/bytes?\(query)"))
                #expect(response.head.statusCode == 200)
                #expect(response.head.body.isEmpty)
                if tls { #expect(response.head.tls?.verifiedChainPins.isEmpty == false) }
                let (count, sha256) = try await drain(response.body)
                #expect(count == Int64(query.split(separator: "&")[0].dropFirst(2))!)
                #expect(sha256 == response.head.headers["X-Body-SHA256"])
                #expect(response.body.receivedBytes == count)
            }
        }
    }

    @Test("A 302 on a stream is followed (its body discarded), and progress reports the final body only")
    func redirectFollowed() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try session()
        defer { session.shutdown() }
        let calls = Mutex<[TransferProgress]>([])
        var options = RequestOptions()
        options.progress = { progress in calls.withLock { $0.append(progress) } }
        let target = "\(server.origin)/bytes?n=2000000"
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let response = try await session.stream(get("\(server.origin)/redirect?status=302&to=\(encoded)"), options: options)
        #expect(response.head.statusCode == 200)
        #expect(response.head.redirectCount == 1)
        let (count, sha256) = try await drain(response.body)
        #expect(count == 2_000_000)
        #expect(sha256 == response.head.headers["X-Body-SHA256"])
        let last = try #require(calls.withLock { $0.last })
        #expect(last.receivedBytes == 2_000_000 && last.expectedReceivedBytes == 2_000_000)
        #expect(calls.withLock { $0.allSatisfy { $0.receivedBytes <= 2_000_000 && $0.expectedReceivedBytes != 1024 } })
        #expect(server.requests == ["GET /redirect?status=302&to=\(encoded)", "GET /bytes?n=2000000"])
    }
}

/// SHA-256 of bytes given in pieces (OpenSSL's EVP digest).
struct SHA256Digest: ~Copyable {
    private let context = EVP_MD_CTX_new()

    init() { EVP_DigestInit_ex(context, EVP_sha256(), nil) }
    deinit { EVP_MD_CTX_free(context) }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { _ = EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
    }

    mutating func hex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest.map { String(format: "%02x", $0) }.joined()
    }
}
