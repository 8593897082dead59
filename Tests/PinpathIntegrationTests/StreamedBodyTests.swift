import Foundation
import PinpathSecurity
import PinpathSupport
import PinpathTestSupport
import Synchronization
import Testing

@testable import PinpathHTTP

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
        let digest = SHA256Digest()
        var count: Int64 = 0
        for try await chunk in body {
            #expect(!chunk.isEmpty)
            chunk.withUnsafeBytes { digest.update($0) }
            count += Int64(chunk.count)
            await pause(count)
        }
        return (count, digest.finish())
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

    @Test("A content-coded body streams as the server sent it, never decoded: gzip and zstd bombs, by length and chunked")
    func contentCodingNotDecoded() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try session()
        defer { session.shutdown() }
        let decodedSize = 256 << 20
        for coding in ["gzip", "zstd"] {
            for chunked in [false, true] {
                // With no Accept-Encoding libcurl adds none; `identity` (as a download asks) is sent as it is.
                for acceptEncoding in [nil, "identity"] {
                    var request = get("\(server.origin)/bomb?coding=\(coding)&n=\(decodedSize)\(chunked ? "&chunked=1" : "")")
                    if let acceptEncoding { request.headers.add(name: "Accept-Encoding", value: acceptEncoding) }
                    let response = try await session.stream(request)
                    #expect(response.head.headers["Content-Encoding"] == coding)
                    #expect(response.head.headers["X-Request-Accept-Encoding"] == acceptEncoding ?? "-")
                    let (count, sha256) = try await drain(response.body)
                    print("\(coding)\(chunked ? " chunked" : ""), Accept-Encoding \(acceptEncoding ?? "none"): \(count) bytes streamed")
                    #expect(sha256 == response.head.headers["X-Body-SHA256"])
                    if !chunked { #expect(count == response.head.headers["Content-Length"].flatMap { Int64($0) }) }
                    #expect(count < 1 << 20)
                }
            }
        }
        // `send` still asks for and decodes every coding libcurl knows, bounded by maximumBodySize after decoding.
        let small = try await session.send(get("\(server.origin)/bomb?coding=gzip&n=1000000"))
        #expect(small.headers["X-Request-Accept-Encoding"]?.contains("gzip") == true)
        #expect(small.body == [UInt8](repeating: 0, count: 1_000_000))
        await #expect {
            _ = try await session.send(get("\(server.origin)/bomb?coding=zstd&n=\(decodedSize)&chunked=1"))
        } throws: { error in
            (error as? HTTPError)?.code == .protocolError
        }
    }

    @Test("A stream whose head names a transfer coding other than chunked is refused before any body byte; send decodes it")
    func transferCodingRefused() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try session()
        defer { session.shutdown() }
        // libcurl 7.88 decodes a transfer coding whatever the request asked: 256 MiB of zeros is 261 KB of gzip here.
        let cases: [(coding: String, quoted: String)] = [
            ("gzip", "gzip, chunked"),
            ("GZip ,", "GZip ,, chunked"),
            ("x\u{1b}]0;pwned\u{07}\u{202e}", #"x\x1b]0;pwned\x07\u{202e}, chunked"#),
        ]
        for (coding, quoted) in cases {
            let query = coding.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            await #expect {
                let response = try await session.stream(get("\(server.origin)/transfer-coded?coding=\(query)&n=\(256 << 20)"))
                for try await chunk in response.body { Issue.record("a body byte was handed over: \(chunk.count) bytes") }
            } throws: { error in
                guard let error = error as? HTTPError else { return false }
                print(error.message)
                return error.code == .protocolError && error.message.contains("transfer coding (\(quoted)) that a stream does not decode")
                    && !error.message.unicodeScalars.contains(where: UntrustedText.needsEscape)
            }
        }
        // `send` keeps libcurl's decoding, bounded by maximumBodySize after it.
        let small = try await session.send(get("\(server.origin)/transfer-coded?coding=gzip&n=1000000"))
        #expect(small.body == [UInt8](repeating: 0, count: 1_000_000))
        await #expect {
            _ = try await session.send(get("\(server.origin)/transfer-coded?coding=gzip&n=\(256 << 20)"))
        } throws: { error in
            (error as? HTTPError)?.code == .protocolError
        }
    }

    @Test("A Content-Length field holding an escape sequence is quoted escaped in the failure for bytes past it")
    func excessMessageEscaped() async throws {
        let plain = try server(tls: false)
        defer { plain.stop() }
        let session = try session()
        defer { session.shutdown() }
        // libcurl reads the leading 5 and ignores the rest of the field; the failure quotes the field.
        let field = "5\u{1b}]0;pwned\u{07}\u{202e}"
        let query = field.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let response = try await session.stream(get("\(plain.origin)/excess?n=5&extra=50&together=1&length=\(query)"))
        #expect(response.head.headers["Content-Length"] == field)
        await #expect {
            for try await _ in response.body {}
        } throws: { error in
            guard let error = error as? HTTPError else { return false }
            print(error.message)
            return error.code == .protocolError && error.message.contains(#"5\x1b]0;pwned\x07\u{202e}"#)
                && !error.message.unicodeScalars.contains(where: UntrustedText.needsEscape)
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

    @Test("A stream redirected to another origin keeps Range and If-Range (a resumed download to a mirror), not Authorization")
    func rangeCrossesOrigins() async throws {
        let server = try server()
        defer { server.stop() }
        let mirror = try RecordingServer(
            address: "::1", certificate: (leaf: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")]),
            directory: pki.directory)
        defer { mirror.stop() }
        let inter = try SecurityPolicy(mode: .publicKey, pins: try pki.chain(["inter"]).map(\.spkiPin), requiresBackupPin: false)
        let session = try session(extra: [HostPolicy(patterns: [try HostPattern(parsing: "::1")], policy: inter)])
        defer { session.shutdown() }
        let encoded = "\(mirror.origin)/file".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        var request = get("\(server.origin)/redirect?status=302&to=\(encoded)")
        request.headers.add(name: "Range", value: "bytes=100-")
        request.headers.add(name: "If-Range", value: "\"v1\"")
        request.headers.add(name: "Authorization", value: "Bearer secret")
        let response = try await session.stream(request)
        #expect(response.head.statusCode == 200)
        for try await _ in response.body {}
        let seen = try #require(mirror.requests.first)
        #expect(seen.header("Range") == "bytes=100-")
        #expect(seen.header("If-Range") == "\"v1\"")
        #expect(seen.header("Authorization") == nil)
    }

    @Test("Back-pressure: a consumer that stops for 2 s holds libcurl at the buffer size plus one write; then it finishes intact")
    func backPressure() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try session()
        defer { session.shutdown() }
        let size = 64 << 20
        let received = Mutex<[(at: ContinuousClock.Instant, bytes: Int64)]>([])
        var options = RequestOptions()
        options.streamBufferSize = 256 << 10
        options.stallTimeout = .seconds(1)  // shorter than the pause: a paused transfer is not stalled
        options.progress = { progress in received.withLock { $0.append((.now, progress.receivedBytes)) } }
        let response = try await session.stream(get("\(server.origin)/bytes?n=\(size)"), options: options)
        var paused: (consumed: Int64, from: ContinuousClock.Instant, to: ContinuousClock.Instant)?
        let (count, sha256) = try await drain(response.body) { consumed in
            guard paused == nil, consumed >= 4 << 20 else { return }
            let from = ContinuousClock.now
            try? await Task.sleep(for: .seconds(2))
            paused = (consumed, from, .now)
        }
        #expect(count == Int64(size))
        #expect(sha256 == response.head.headers["X-Body-SHA256"])
        let pause = try #require(paused)
        let during = received.withLock { $0.filter { $0.at <= pause.to }.map(\.bytes) }
        let most = try #require(during.max())
        // The buffer (up to the limit plus the write that crossed it) and the write libcurl holds while paused.
        let bound = pause.consumed + Int64(options.streamBufferSize) + 2 * 16_384 + 16_384
        print("consumed \(pause.consumed) before the pause; libcurl had received at most \(most) by its end (bound \(bound))")
        #expect(most <= bound)
        #expect(most < Int64(size) / 2)
    }

    /// A sparse file of `size` zero bytes in a new directory under the PKI's, for nginx to serve.
    func zeroFile(size: Int) throws -> (directory: String, name: String) {
        let directory = "\(pki.directory)/files-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let descriptor = open("\(directory)/zeros.bin", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0 && ftruncate(descriptor, off_t(size)) == 0)
        close(descriptor)
        return (directory, "zeros.bin")
    }

    /// nginx offering HTTP/2 over https with the `ip` leaf, serving `root`.
    func http2Server(root: String) throws -> NginxFileServer {
        try NginxFileServer(
            root: root, certificate: (leaf: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")]), http2: true,
            directory: pki.directory)
    }

    @Test("To an HTTP/2 server a stream goes over HTTP/1.1, even when a send left a pooled HTTP/2 connection to it")
    func streamsOverHTTP1() async throws {
        let size = 8 << 20
        let file = try zeroFile(size: size)
        defer { try? FileManager.default.removeItem(atPath: file.directory) }
        let nginx = try http2Server(root: file.directory)
        defer { nginx.stop() }
        let session = try session()
        defer { session.shutdown() }
        let url = "\(nginx.origin)/\(file.name)"
        var collect = RequestOptions()
        collect.maximumBodySize = size
        let sent = try await session.send(get(url), options: collect)
        #expect(sent.httpVersion == "HTTP/2")
        #expect(sent.body.count == size)
        let response = try await session.stream(get(url))
        #expect(response.head.httpVersion == "HTTP/1.1")
        #expect(response.head.statusCode == 200)
        let (count, sha256) = try await drain(response.body)
        let expected = SHA256Digest()
        let mebibyte = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<(size >> 20) { mebibyte.withUnsafeBytes { expected.update($0) } }
        #expect(count == Int64(size))
        #expect(sha256 == expected.finish())
        // The pooled HTTP/2 connection is still the one a send takes.
        #expect(try await session.send(get(url), options: collect).httpVersion == "HTTP/2")
    }

    @Test("Progress on a download: at least 100 ms between reports, the last one complete; on an upload from a stream too")
    func progressReports() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try session()
        defer { session.shutdown() }
        let reports = Mutex<[(at: ContinuousClock.Instant, progress: TransferProgress)]>([])
        var options = RequestOptions()
        options.progress = { progress in reports.withLock { $0.append((.now, progress)) } }
        let size = 48 << 20
        let response = try await session.stream(get("\(server.origin)/bytes?n=\(size)"), options: options)
        _ = try await drain(response.body) { _ in try? await Task.sleep(for: .microseconds(200)) }
        let downloads = reports.withLock { $0 }
        try Self.checkSpacing(downloads.map(\.at))
        let last = try #require(downloads.last?.progress)
        #expect(last.receivedBytes == Int64(size) && last.expectedReceivedBytes == Int64(size))
        #expect(downloads.count >= 2)

        // An upload from a stream to a server that reads it slowly (64 KiB every 20 ms).
        reports.withLock { $0.removeAll() }
        let uploadSize = 6 << 20
        var upload = SessionRequest(method: .put, url: URL(string: "\(server.origin)/upload")!)
        upload.body = .stream(PatternBody(count: uploadSize))
        let answer = try await session.send(upload, options: options)
        #expect(String(decoding: answer.body, as: UTF8.self).hasPrefix("\(uploadSize) "))
        let uploads = reports.withLock { $0 }
        try Self.checkSpacing(uploads.map(\.at))
        #expect(uploads.allSatisfy { $0.progress.expectedSentBytes == Int64(uploadSize) })
        #expect(uploads.last?.progress.sentBytes == Int64(uploadSize))
        let partial = uploads.filter { $0.progress.sentBytes > 0 && $0.progress.sentBytes < Int64(uploadSize) }
        #expect(partial.count >= 3, "reports while the upload was under way: \(uploads.map(\.progress.sentBytes))")
        #expect(zip(uploads, uploads.dropFirst()).allSatisfy { $0.progress.sentBytes <= $1.progress.sentBytes })
    }

    /// Every report but the last (made when the transfer ends) is at least 100 ms after the one before.
    static func checkSpacing(_ times: [ContinuousClock.Instant]) throws {
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }.dropLast()
        #expect(gaps.allSatisfy { $0 >= .milliseconds(100) }, "gaps: \(gaps)")
    }

    @Test("A stream to a server whose key the policy rejects sends no byte; a redirect to one fails the same way")
    func gatesHold() async throws {
        // The handshake itself: s_server echoes what it receives into the transcript.
        let transcript = "\(pki.directory)/transcript-\(UUID().uuidString)"
        let echo = try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory, www: false,
            transcript: transcript)
        defer { echo.stop() }
        var options = RequestOptions()
        options.timeout = .seconds(5)
        let wrong = try session(pins: ["otherroot"])
        defer { wrong.shutdown() }
        await #expect {
            _ = try await wrong.stream(get("https://127.0.0.1:\(echo.port)/"), options: options)
        } throws: { error in
            (error as? HTTPError)?.code == .policyRejected && (error as? HTTPError)?.evaluation?.failure?.reason == .pinMismatch
        }
        // The right pin does send a request there, so the transcript can show one.
        options.timeout = .milliseconds(700)
        let right = try session()
        defer { right.shutdown() }
        _ = try? await right.stream(get("https://127.0.0.1:\(echo.port)/"), options: options)
        let seen = try String(contentsOfFile: transcript, encoding: .utf8)
        #expect(seen.components(separatedBy: "GET / HTTP").count == 2, "exactly one request, from the correctly pinned session: \(seen)")

        // A redirect from the pinned server to [::1], whose policy pins another root: refused in the handshake.
        let server = try server()
        defer { server.stop() }
        let recording = try RecordingServer(
            address: "::1", certificate: (leaf: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")]),
            directory: pki.directory)
        defer { recording.stop() }
        let otherRoot = try SecurityPolicy(mode: .publicKey, pins: try pki.chain(["otherroot"]).map(\.spkiPin), requiresBackupPin: false)
        let session = try session(extra: [HostPolicy(patterns: [try HostPattern(parsing: "::1")], policy: otherRoot)])
        defer { session.shutdown() }
        let target = "\(recording.origin)/bytes"
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        await #expect {
            _ = try await session.stream(get("\(server.origin)/redirect?status=302&to=\(encoded)"))
        } throws: { error in
            (error as? HTTPError)?.code == .policyRejected
        }
        #expect(recording.requests.isEmpty)
        #expect(server.requests.count == 1)
    }

    @Test("Stall, head timeout and body timeout fail with timed_out; early close and more than Content-Length with protocol_error")
    func bodyFailures() async throws {
        let server = try server()
        defer { server.stop() }
        let plain = try self.server(tls: false)
        defer { plain.stop() }
        let session = try session()
        defer { session.shutdown() }
        var options = RequestOptions()
        options.stallTimeout = .seconds(1)
        let cases: [(server: BodyServer, path: String, code: HTTPError.Code)] = [
            (server, "/stall?n=1000000&after=100000", .timedOut),
            (server, "/short?n=1000000&after=300000", .protocolError),
            (server, "/excess?n=100000&extra=5000", .protocolError),
            (plain, "/excess?n=100000&extra=5000", .protocolError),
            (server, "/excess?n=1000&extra=50&together=1", .protocolError),
            (plain, "/excess?n=1000&extra=50&together=1", .protocolError),
        ]
        for (server, path, code) in cases {
            let started = ContinuousClock.now
            let response = try await session.stream(get("\(server.origin)\(path)"), options: options)
            #expect(response.head.statusCode == 200)
            var received: Int64 = 0
            await #expect {
                for try await chunk in response.body { received += Int64(chunk.count) }
            } throws: { error in
                print("\(path): \(error)")
                return (error as? HTTPError)?.code == code
            }
            if path.hasPrefix("/stall") {
                #expect(received == 100_000)
                #expect(ContinuousClock.now - started >= .seconds(1) && ContinuousClock.now - started < .seconds(5))
            }
        }
        // `timeout` bounds the time to the head: a listener that never answers.
        let silent = try SilentServer()
        defer { silent.stop() }
        var headOptions = RequestOptions()
        headOptions.timeout = .milliseconds(500)
        let started = ContinuousClock.now
        await #expect {
            _ = try await session.stream(get("http://127.0.0.1:\(silent.port)/"), options: headOptions)
        } throws: { error in
            (error as? HTTPError)?.code == .timedOut
        }
        #expect(ContinuousClock.now - started < .seconds(3))

        // A body timeout bounds the whole body even while bytes keep coming.
        options.bodyTimeout = .milliseconds(300)
        options.streamBufferSize = 64 << 10
        let slow = try await session.stream(get("\(server.origin)/bytes?n=\(64 << 20)"), options: options)
        await #expect {
            for try await _ in slow.body { try? await Task.sleep(for: .milliseconds(10)) }
        } throws: { error in
            (error as? HTTPError)?.code == .timedOut
        }
    }

    @Test("A stream cancelled, dropped, or whose task is cancelled mid-body ends its transfer and closes its connection")
    func cancelReleases() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try session()
        defer { session.shutdown() }
        func waitForNoConnection() async -> Bool {
            for _ in 0..<100 {
                if server.openConnections == 0 { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
        let url = "\(server.origin)/bytes?n=\(512 << 20)"
        // The runtime's timer descriptor (a timerfd, made at a process's first sleep) is not the transfers': made first.
        try await Task.sleep(for: .milliseconds(1))
        let descriptors = Self.openDescriptors()

        // cancel(): the iterator then ends with nil.
        let cancelled = try await session.stream(get(url))
        var iterator = cancelled.body.makeAsyncIterator()
        #expect(try await iterator.next()?.isEmpty == false)
        #expect(server.openConnections == 1)
        cancelled.body.cancel()
        #expect(try await iterator.next() == nil)
        #expect(await waitForNoConnection())

        // Dropped after one chunk, without a word.
        do {
            let dropped = try await session.stream(get(url))
            var iterator = dropped.body.makeAsyncIterator()
            #expect(try await iterator.next()?.isEmpty == false)
        }
        #expect(await waitForNoConnection())

        // The iterating task cancelled while it waits for a stalled body.
        let stalled = try await session.stream(get("\(server.origin)/stall?n=1000000&after=1000"))
        let reader = Task { () throws(HTTPError) -> Int in
            var count = 0
            for try await chunk in stalled.body { count += chunk.count }
            return count
        }
        try await Task.sleep(for: .milliseconds(300))
        reader.cancel()
        await #expect {
            _ = try await reader.value
        } throws: { error in
            (error as? HTTPError)?.code == .cancelled
        }
        #expect(await waitForNoConnection())
        // The server sees the close before this process has always finished it; a loaded machine needs a moment.
        var after = Self.openDescriptors()
        for _ in 0..<100 where after.count > descriptors.count {
            try await Task.sleep(for: .milliseconds(20))
            after = Self.openDescriptors()
        }
        #expect(
            after.count <= descriptors.count,
            "descriptors before \(descriptors.count), after \(after.count); new: \(after.subtracting(descriptors).sorted())")
    }

    /// This process's open descriptors, each as its number and what it points to (`7 -> socket:[1234]`).
    static func openDescriptors() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return Set(
            names.compactMap { name in
                // The directory's own descriptor, open while it is listed, is gone by now.
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")).map { "\(name) -> \($0)" }
            })
    }
}

/// A request body of the server's pattern, made as it is read.
struct PatternBody: BodySource {
    let count: Int

    func makeReader() throws(HTTPError) -> any BodyReader { Reader(left: count) }

    final class Reader: BodyReader {
        var left: Int
        var position = 0
        init(left: Int) { self.left = left }

        func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
            let count = min(buffer.count, left)
            for index in 0..<count {
                let i = (position + index) % (1 << 20)
                buffer[index] = UInt8(truncatingIfNeeded: i * 31 + (i >> 11))
            }
            position += count
            left -= count
            return count
        }
    }
}
