import Foundation
import Glibc
import PinpathHTTP
import PinpathSecurity
import PinpathSerialization
import PinpathTestSupport
import Synchronization
import Testing

/// Issue 32, item 3 for uploads (AFNetworking's `uploadTaskWithRequest:fromFile:progress:`): a file's bytes sent
/// as the body with `HTTPRequestSerializer.request(_:_:bodyFromFile:)` over pinned https to ``BodyServer``'s
/// `/upload` (which reads 64 KiB every 20 ms and answers `<count> <sha256>`), with `RequestOptions.progress`.
@Suite("Whole-file uploads", .serialized)
struct FileUploadTests {
    let streamed = StreamedBodyTests()
    let scratch: TemporaryDirectory

    init() throws { scratch = try TemporaryDirectory("file-upload") }

    /// `size` random bytes in a new file, and their SHA-256 by `sha256sum`.
    func randomFile(_ name: String, size: Int) throws -> (path: String, sha256: String) {
        let path = scratch.file(name)
        _ = try Shell.check(["dd", "if=/dev/urandom", "of=\(path)", "bs=64K", "count=\(size >> 16)", "status=none"])
        return (path, String(try Shell.check(["sha256sum", path]).prefix(64)))
    }

    @Test("A few MiB from a file: the server's count and SHA-256 match; progress at least 100 ms apart, the last complete")
    func uploadWithProgress() async throws {
        // Loopback's socket buffers can take 3 MiB or more before the server reads anything: 12 MiB leaves several
        // seconds of upload at the server's 3.2 MiB/s for progress reports to come from.
        let size = 12 << 20
        let file = try randomFile("upload.bin", size: size)
        let server = try streamed.server()
        defer { server.stop() }
        let session = try streamed.session()
        defer { session.shutdown() }
        let reports = Mutex<[(at: ContinuousClock.Instant, progress: TransferProgress)]>([])
        var options = RequestOptions()
        options.progress = { progress in reports.withLock { $0.append((.now, progress)) } }
        let request = try HTTPRequestSerializer().request(.put, "\(server.origin)/upload", bodyFromFile: file.path)
        let response = try await session.send(request, options: options)
        #expect(response.statusCode == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "\(size) \(file.sha256)")
        #expect(response.tls?.verifiedChainPins.isEmpty == false)
        let uploads = reports.withLock { $0 }
        try StreamedBodyTests.checkSpacing(uploads.map(\.at))
        let last = try #require(uploads.last?.progress)
        #expect(last.sentBytes == Int64(size) && last.expectedSentBytes == Int64(size))
        let partial = uploads.filter { $0.progress.sentBytes > 0 && $0.progress.sentBytes < Int64(size) }
        #expect(partial.count >= 3, "reports while the upload was under way: \(uploads.map(\.progress.sentBytes))")
        #expect(zip(uploads, uploads.dropFirst()).allSatisfy { $0.progress.sentBytes <= $1.progress.sentBytes })
    }

    enum Change: String, CaseIterable, Sendable { case grows, shrinks }

    @Test("A file that grows or shrinks while it is being sent fails unreadable_file naming it", arguments: Change.allCases)
    func changesWhileSending(_ change: Change) async throws {
        let size = 4 << 20
        let file = try randomFile("changing.bin", size: size)
        let server = try streamed.server()
        defer { server.stop() }
        let session = try streamed.session()
        defer { session.shutdown() }
        let changed = Mutex(false)
        var options = RequestOptions()
        let path = file.path
        // Once a first MiB has gone (the server reads slowly: most of the file is still to be read).
        options.progress = { progress in
            guard progress.sentBytes >= 1 << 20 else { return }
            changed.withLock { done in
                guard !done else { return }
                done = true
                _ = truncate(path, off_t(change == .grows ? size + 1 : size / 2))
            }
        }
        let request = try HTTPRequestSerializer().request(.put, "\(server.origin)/upload", bodyFromFile: path)
        await #expect {
            _ = try await session.send(request, options: options)
        } throws: { error in
            let error = error as? HTTPError
            return error?.code == .unreadableFile
                && error?.message.contains("upload file \(path) \(change == .grows ? "grew" : "shrank") while being sent") == true
        }
        #expect(changed.withLock { $0 })
    }
}
