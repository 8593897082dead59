import Foundation
import PinpathHTTP
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Issue 32, item 1's "memory stays flat": the process's peak resident set while a 256 MiB body streams. A test
/// of the whole process's memory: scripts/test runs it with the agent's memory figures, in a process where
/// nothing else runs at the same time.
@Suite("Streamed body memory", .serialized)
struct StreamedBodyMemoryTests {
    let pki = TestPKI.shared

    /// The process's peak resident set (VmHWM), in bytes.
    static func peakResidentBytes() throws -> Int { try statusBytes("VmHWM:") }

    /// The process's resident set now (VmRSS), in bytes.
    static func residentBytes() throws -> Int { try statusBytes("VmRSS:") }

    private static func statusBytes(_ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field) })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])) * 1024
    }

    /// Sets the peak resident set back to the current one (`/proc/self/clear_refs`, Linux ≥ 4.0).
    static func resetPeakResidentBytes() throws {
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    @Test("256 MiB through https with a pin: every byte arrives (SHA-256), and the peak RSS grows by less than 32 MiB")
    func largeBodyFlatMemory() async throws {
        let helper = StreamedBodyTests()
        let server = try helper.server()
        defer { server.stop() }
        let session = try helper.session()
        defer { session.shutdown() }
        let size = 256 << 20
        try Self.resetPeakResidentBytes()
        let before = try Self.peakResidentBytes()
        let response = try await session.stream(helper.get("\(server.origin)/bytes?n=\(size)"))
        let (count, sha256) = try await helper.drain(response.body)
        let grown = try Self.peakResidentBytes() - before
        print("streamed \(count) bytes; VmHWM grew by \(grown >> 10) KiB")
        #expect(count == Int64(size))
        #expect(sha256 == response.head.headers["X-Body-SHA256"])
        // A collected body alone would add 256 MiB (the control below shows it).
        #expect(grown < 32 << 20, "peak RSS grew by \(grown >> 20) MiB")
        // The control: the same body collected by `send` breaks the bound, so the bound means something.
        var collect = RequestOptions()
        collect.maximumBodySize = size + 1
        try Self.resetPeakResidentBytes()
        let beforeCollecting = try Self.peakResidentBytes()
        let collected = try await session.send(helper.get("\(server.origin)/bytes?n=\(size)"), options: collect)
        let grownCollected = try Self.peakResidentBytes() - beforeCollecting
        print("collected \(collected.body.count) bytes; VmHWM grew by \(grownCollected >> 10) KiB")
        #expect(grownCollected >= 32 << 20)
    }

    @Test("Four streams of a 256 MiB gzip bomb held paused: only encoded bytes wait, and RSS and its peak grow by < 16 MiB")
    func pausedBombsFlatMemory() async throws {
        let helper = StreamedBodyTests()
        let server = try helper.server()
        defer { server.stop() }
        let session = try helper.session()
        defer { session.shutdown() }
        let url = "\(server.origin)/bomb?coding=gzip&n=\(256 << 20)&chunked=1"
        // Once first: the server compresses it, and the session has its TLS context, before anything is measured.
        _ = try await helper.drain(try await session.stream(helper.get(url)).body)
        var options = RequestOptions()
        options.streamBufferSize = 64 << 10  // smaller than the encoded body: each stream really pauses
        try Self.resetPeakResidentBytes()
        let peakBefore = try Self.peakResidentBytes()
        let before = try Self.residentBytes()
        var held: [StreamedResponse] = []
        defer { for response in held { response.body.cancel() } }
        for _ in 0..<4 {
            let response = try await session.stream(helper.get(url), options: options)
            var iterator = response.body.makeAsyncIterator()
            #expect(try await iterator.next()?.isEmpty == false)
            held.append(response)
        }
        try await Task.sleep(for: .seconds(1))  // libcurl reads and buffers what it may meanwhile
        let grown = try Self.residentBytes() - before
        let peakGrown = try Self.peakResidentBytes() - peakBefore
        print("4 paused gzip bombs: VmRSS grew by \(grown >> 10) KiB, VmHWM by \(peakGrown >> 10) KiB")
        #expect(grown < 16 << 20, "RSS grew by \(grown >> 20) MiB")
        #expect(peakGrown < 16 << 20, "peak RSS grew by \(peakGrown >> 20) MiB")
    }

    @Test("To an HTTP/2 server, three streams held paused while a fourth reads 64 MiB: RSS grows by < 24 MiB, not a 32 MiB window each")
    func pausedStreamsBesideOneRead() async throws {
        let helper = StreamedBodyTests()
        let size = 64 << 20
        let file = try helper.zeroFile(size: size)
        defer { try? FileManager.default.removeItem(atPath: file.directory) }
        let nginx = try helper.http2Server(root: file.directory)
        defer { nginx.stop() }
        let session = try helper.session()
        defer { session.shutdown() }
        let url = "\(nginx.origin)/\(file.name)"
        // Once first: the session has its TLS context, and a pooled connection, before anything is measured.
        _ = try await helper.drain(try await session.stream(helper.get(url)).body)
        let before = try Self.residentBytes()
        var held: [StreamedResponse] = []
        defer { for response in held { response.body.cancel() } }
        for _ in 0..<3 {
            let response = try await session.stream(helper.get(url))
            var iterator = response.body.makeAsyncIterator()
            #expect(try await iterator.next()?.isEmpty == false)
            held.append(response)
        }
        let read = try await session.stream(helper.get(url))
        // Measured even when the read fails: what the paused streams hold by then is the point.
        var count: Int64?
        do { count = try await helper.drain(read.body).count } catch { Issue.record(error, "the stream read to its end failed") }
        #expect(count == Int64(size))
        try await Task.sleep(for: .milliseconds(500))  // libcurl reads and buffers what it may meanwhile
        let grown = try Self.residentBytes() - before
        print("3 paused streams beside one read to its end (\(held.map(\.head.httpVersion))): VmRSS grew by \(grown >> 10) KiB")
        // Over HTTP/2 each paused stream would hold its window, 32 MiB in libcurl 7.88: 96 MiB for three.
        #expect(grown < 24 << 20, "RSS grew by \(grown >> 20) MiB")
    }

    @Test("Four streams of a 256 MiB gzip sent as a transfer coding: each refused at its head, and RSS grows by < 16 MiB")
    func transferCodedBombsRefused() async throws {
        let helper = StreamedBodyTests()
        let server = try helper.server()
        defer { server.stop() }
        let session = try helper.session()
        defer { session.shutdown() }
        let url = "\(server.origin)/transfer-coded?coding=gzip&n=\(256 << 20)"
        // Once first: the server compresses it, and the session has its TLS context, before anything is measured.
        _ = try? await helper.drain(try await session.stream(helper.get(url)).body)
        let before = try Self.residentBytes()
        var held: [StreamedResponse] = []
        defer { for response in held { response.body.cancel() } }
        for _ in 0..<4 {
            await #expect(throws: HTTPError.self) {
                // Were the head handed over, its first chunk read and the stream held paused: what it costs.
                let response = try await session.stream(helper.get(url))
                var iterator = response.body.makeAsyncIterator()
                _ = try await iterator.next()
                held.append(response)
            }
        }
        try await Task.sleep(for: .seconds(1))
        let grown = try Self.residentBytes() - before
        print("4 transfer-coded gzip bombs (\(held.count) held): VmRSS grew by \(grown >> 10) KiB")
        #expect(grown < 16 << 20, "RSS grew by \(grown >> 20) MiB")
    }
}
