import Foundation
import PinpathSecurity
import PinpathTestSupport
import Synchronization
import Testing

@testable import PinpathHTTP

/// `Session.download` against real https servers on loopback (a Python file server that honours ranges and
/// misbehaves on demand): resumption with a checksum, the gates on every reconnection (the attack: a "resume"
/// from a server with an unpinned key writes nothing), ranges ignored or wrong, more bytes than announced,
/// a changed file, destinations that are not regular files, a digest mismatch.
@Suite("Session.download")
final class DownloadTests {
    let scratch: TemporaryDirectory
    /// 3 MiB of random bytes, and their SHA-256 by `sha256sum`.
    let source: String
    let data: Data
    let sha256: String
    let pki = TestPKI.shared
    static let half = 1 << 20

    init() throws {
        scratch = try TemporaryDirectory("download")
        source = scratch.file("source.bin")
        _ = try Shell.check(["dd", "if=/dev/urandom", "of=\(source)", "bs=1M", "count=3", "status=none"])
        data = try #require(FileManager.default.contents(atPath: source))
        sha256 = String(try Shell.check(["sha256sum", source]).prefix(64))
    }

    /// The pinned loopback identity, and the other trusted CA's (a valid chain for 127.0.0.1, another key).
    var pinned: (leaf: String, key: String, chain: [String]) { (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]) }
    var unpinned: (leaf: String, key: String, chain: [String]) {
        (pki.path("otherip"), pki.path("otherip", "key"), [pki.path("otherinter")])
    }

    func server(_ misbehaviours: [RangeFileServer.Misbehaviour] = [], identity: (leaf: String, key: String, chain: [String])? = nil) throws
        -> RangeFileServer
    {
        try RangeFileServer(serving: source, certificate: identity ?? pinned, misbehaviours: misbehaviours, directory: scratch.path)
    }

    func get(_ url: String) -> SessionRequest { SessionRequest(method: .get, url: URL(string: url)!) }
    func contents(_ name: String) -> Data? { FileManager.default.contents(atPath: scratch.file(name)) }
    func exists(_ name: String) -> Bool {
        var status = stat()
        return lstat(scratch.file(name), &status) == 0
    }

    @Test("A transfer dropped half way reconnects with Range and If-Range, and the file is complete with the right SHA-256")
    func droppedAndResumed() async throws {
        let server = try server([.dropAfter(bytes: Self.half)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let reports = ProgressLog()
        let result = try await session.download(
            get("\(server.origin)/file.bin"), to: scratch.file("file.bin"),
            download: DownloadOptions(expectedSHA256: sha256, progress: { reports.append($0) }))
        #expect(result.bytes == Int64(data.count) && result.sha256 == sha256 && result.reconnections == 1 && !result.restarted)
        #expect(contents("file.bin") == data)
        #expect(try Shell.check(["sha256sum", scratch.file("file.bin")]).hasPrefix(sha256))
        let requests = server.requests
        try #require(requests.count == 2)
        let resumedFrom = try #require(result.resumedFrom)
        #expect(resumedFrom > 0 && resumedFrom <= Int64(Self.half))
        #expect(requests[0].header("Range") == nil && requests[0].header("Accept-Encoding") == "identity")
        #expect(requests[1].header("Range") == "bytes=\(resumedFrom)-" && requests[1].header("If-Range") == "\"v1\"")
        #expect(!exists(".file.bin.pinpath-partial") && !exists(".file.bin.pinpath-partial.json"))
        // Progress counts the whole file: the resumed part included, ending at the length.
        #expect(reports.values.last == DownloadProgress(bytes: Int64(data.count), expectedBytes: Int64(data.count)))
        #expect(reports.values.allSatisfy { $0.expectedBytes == nil || $0.expectedBytes == Int64(data.count) })
        var status = stat()
        _ = stat(scratch.file("file.bin"), &status)
        #expect(status.st_mode & 0o777 == 0o666 & ~DownloadDestination.umask)
    }

    /// The attack's common check: the download failed `policy_rejected`, the partial file holds exactly the pinned
    /// server's first part, and the destination does not exist.
    func expectNothingWrittenFromTheSecondServer(_ outcome: Result<DownloadResult, HTTPError>) throws {
        guard case .failure(let error) = outcome else {
            Issue.record("the download from an unpinned server succeeded")
            return
        }
        #expect(error.code == .policyRejected, "\(error)")
        #expect(!exists("file.bin"))
        let partial = try #require(contents(".file.bin.pinpath-partial"))
        #expect(partial.count > 0 && partial.count <= Self.half)
        #expect(partial == data.prefix(partial.count))
    }

    @Test(
        "The attack: the same port answers the reconnection with a valid certificate of another key: policy_rejected, nothing of it written"
    )
    func reconnectionToSwitchedKey() async throws {
        let server = try server([
            .dropAfter(bytes: Self.half), .switchIdentityAfterFirst(leaf: unpinned.leaf, key: unpinned.key, chain: unpinned.chain),
        ])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let outcome = await downloadOutcome {
            try await session.download(get("\(server.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        try expectNothingWrittenFromTheSecondServer(outcome)
        #expect(server.connections == 2, "the reconnection reached the server")
        #expect(server.requests.count == 1, "the second connection carried no request")
    }

    @Test("The attack: the resumption is redirected to a mirror with an unpinned key: policy_rejected, the mirror saw no request")
    func resumptionRedirectedToUnpinnedMirror() async throws {
        let mirror = try server(identity: unpinned)
        defer { mirror.stop() }
        let origin = try server([.dropAfter(bytes: Self.half), .redirectRanges(to: "\(mirror.origin)/file.bin")])
        defer { origin.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let outcome = await downloadOutcome {
            try await session.download(get("\(origin.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        try expectNothingWrittenFromTheSecondServer(outcome)
        #expect(origin.requests.count == 2, "the resumption was asked of the origin, which redirected it")
        #expect(mirror.connections == 1 && mirror.requests.isEmpty, "the mirror's handshake was refused before any request")
    }

    @Test("The attack: --continue against another server for the same name (an unpinned key): policy_rejected, the partial unchanged")
    func resumeFromUnpinnedServer() async throws {
        let first = try server([.dropAfter(bytes: Self.half)])
        defer { first.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let url = "\(first.origin)/file.bin"
        await #expect(throws: HTTPError.self) {
            try await session.download(self.get(url), to: self.scratch.file("file.bin"), download: DownloadOptions(reconnects: 0))
        }
        let partial = try #require(contents(".file.bin.pinpath-partial"))
        first.stop()
        // The same URL, its port now served with a valid certificate of another key.
        let impostor = try RangeFileServer(serving: source, certificate: unpinned, port: first.port, directory: scratch.path)
        defer { impostor.stop() }
        let outcome = await downloadOutcome {
            try await session.download(get(url), to: scratch.file("file.bin"), download: DownloadOptions(resume: true))
        }
        try expectNothingWrittenFromTheSecondServer(outcome)
        #expect(contents(".file.bin.pinpath-partial") == partial)
        #expect(impostor.requests.isEmpty)
    }

    @Test("A server that ignores the range (200) restarts the file from the first byte, cleanly")
    func rangeIgnored() async throws {
        let server = try server([.dropAfter(bytes: Self.half), .ignoreRange])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let result = try await session.download(
            get("\(server.origin)/file.bin"), to: scratch.file("file.bin"), download: DownloadOptions(expectedSHA256: sha256))
        #expect(result.restarted && result.resumedFrom == nil && result.reconnections == 1)
        #expect(contents("file.bin") == data)
        #expect(server.requests.count == 2 && server.requests[1].header("Range") != nil)
    }

    @Test("A Content-Range that is not the range asked for: invalid_response, the partial file unchanged, the destination untouched")
    func shiftedRange() async throws {
        try Data("old good file".utf8).write(to: URL(fileURLWithPath: scratch.file("file.bin")))
        let server = try server([.dropAfter(bytes: Self.half), .shiftedRange])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let error = try await downloadFailure("a shifted range was accepted") {
            try await session.download(get("\(server.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        #expect(error.code == .invalidResponse && error.message.contains("is not the bytes asked for"), "\(error)")
        #expect(contents("file.bin") == Data("old good file".utf8))
        let partial = try #require(contents(".file.bin.pinpath-partial"))
        #expect(partial.count > 0 && partial == data.prefix(partial.count))
    }

    @Test("More bytes than Content-Length: protocol_error, the destination untouched")
    func moreThanAnnounced() async throws {
        try Data("old good file".utf8).write(to: URL(fileURLWithPath: scratch.file("file.bin")))
        let server = try server([.excess(bytes: 4096)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let error = try await downloadFailure("a body longer than announced was accepted") {
            try await session.download(get("\(server.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        #expect(error.code == .protocolError, "\(error)")
        #expect(contents("file.bin") == Data("old good file".utf8))
        #expect(server.requests.count == 1, "not retried")
    }

    @Test("Resume: a partial file is continued from its length; when the validator changed (If-Range fails, 200) it restarts")
    func resumeAndChangedValidator() async throws {
        let server = try server([.dropAfter(bytes: Self.half, responses: 2)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let url = "\(server.origin)/file.bin"
        let noReconnect = DownloadOptions(reconnects: 0)
        await #expect(throws: HTTPError.self) {
            try await session.download(self.get(url), to: self.scratch.file("a.bin"), download: noReconnect)
        }
        await #expect(throws: HTTPError.self) {
            try await session.download(self.get(url), to: self.scratch.file("b.bin"), download: noReconnect)
        }
        let partialA = try #require(contents(".a.bin.pinpath-partial"))
        #expect(!exists("a.bin") && !exists("b.bin"))

        let resumed = try await session.download(
            get(url), to: scratch.file("a.bin"), download: DownloadOptions(resume: true, expectedSHA256: sha256))
        #expect(resumed.resumedFrom == Int64(partialA.count) && !resumed.restarted && contents("a.bin") == data)
        #expect(server.requests.last?.header("Range") == "bytes=\(partialA.count)-")

        try server.setETag("\"v2\"")
        let restarted = try await session.download(
            get(url), to: scratch.file("b.bin"), download: DownloadOptions(resume: true, expectedSHA256: sha256))
        #expect(restarted.restarted && restarted.resumedFrom == nil && contents("b.bin") == data)
        #expect(server.requests.last?.header("If-Range") == "\"v1\"")
    }

    @Test("Resume of a partial file that is already whole: the server's 416 (bytes */LENGTH) completes it, digest checked")
    func resumeOfWholeFile() async throws {
        let server = try server()
        defer { server.stop() }
        let url = "\(server.origin)/file.bin"
        try data.write(to: URL(fileURLWithPath: scratch.file(".file.bin.pinpath-partial")))
        #expect(chmod(scratch.file(".file.bin.pinpath-partial"), 0o600) == 0, "a partial file as pinpath makes it")
        let record = try #require(PartialRecord(url: url, headers: ["ETag": "\"v1\""], length: Int64(data.count)))
        try record.write(to: scratch.file(".file.bin.pinpath-partial.json"))
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let result = try await session.download(
            get(url), to: scratch.file("file.bin"), download: DownloadOptions(resume: true, expectedSHA256: sha256))
        #expect(result.resumedFrom == Int64(data.count) && result.bytes == Int64(data.count) && contents("file.bin") == data)
        #expect(server.requests.count == 1 && server.requests[0].header("Range") == "bytes=\(data.count)-")
    }

    @Test(
        "A record that is not one (garbage, oversized, another URL's, a validator with a line break) is not resumed: the file starts from 0",
        arguments: ["garbage", "oversized", "other-url", "crlf"])
    func untrustedRecord(kind: String) async throws {
        let server = try server()
        defer { server.stop() }
        let url = "\(server.origin)/file.bin"
        // A partial file of junk: appended to, it would give a wrong file.
        try Data(repeating: 0x41, count: 1000).write(to: URL(fileURLWithPath: scratch.file(".file.bin.pinpath-partial")))
        let recordPath = scratch.file(".file.bin.pinpath-partial.json")
        switch kind {
        case "garbage": try #"{"version":1,"url_sha256":"#.write(toFile: recordPath, atomically: true, encoding: .utf8)
        case "oversized": try String(repeating: " ", count: 8192).write(toFile: recordPath, atomically: true, encoding: .utf8)
        case "other-url":
            let other = PartialRecord(url: url + "?other", headers: ["ETag": "\"v1\""], length: Int64(data.count))
            try #require(other != nil)
            try other?.write(to: recordPath)
        default:
            let injected =
                #"{"version":1,"url_sha256":"\#(PartialRecord.digest(of: url))","validator":"\"v1\"\r\nX-Injected: 1","length":\#(data.count)}"#
            try injected.write(toFile: recordPath, atomically: true, encoding: .utf8)
        }
        // Modes as pinpath makes them: the record is refused for what it holds, not for its mode.
        #expect(chmod(scratch.file(".file.bin.pinpath-partial"), 0o600) == 0 && chmod(recordPath, 0o600) == 0)
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let result = try await session.download(get(url), to: scratch.file("file.bin"), download: DownloadOptions(resume: true))
        #expect(result.resumedFrom == nil && contents("file.bin") == data)
        #expect(result.sha256 == nil, "no digest computed when none was asked for")
        #expect(server.requests.count == 1 && server.requests[0].header("Range") == nil && server.requests[0].header("X-Injected") == nil)
    }

    @Test(
        "A partial file others may read or write, or a hard link to another file, is never resumed nor written: removed, the download starts from 0",
        arguments: ["group-readable", "world-writable", "hard-link"])
    func partialNotOurs(kind: String) async throws {
        let server = try server()
        defer { server.stop() }
        let url = "\(server.origin)/file.bin"
        let partialPath = scratch.file(".file.bin.pinpath-partial")
        // A prefix of the real file, and a record for it: only the file's mode or links stand in the way.
        let prefix = data.prefix(1000)
        let other = scratch.file("other")
        try prefix.write(to: URL(fileURLWithPath: kind == "hard-link" ? other : partialPath))
        switch kind {
        case "group-readable": #expect(chmod(partialPath, 0o640) == 0)
        case "world-writable": #expect(chmod(partialPath, 0o666) == 0)
        default:
            #expect(chmod(other, 0o600) == 0 && link(other, partialPath) == 0)
        }
        let record = try #require(PartialRecord(url: url, headers: ["ETag": "\"v1\""], length: Int64(data.count)))
        try record.write(to: scratch.file(".file.bin.pinpath-partial.json"))
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let result = try await session.download(
            get(url), to: scratch.file("file.bin"), download: DownloadOptions(resume: true, expectedSHA256: sha256))
        #expect(result.resumedFrom == nil && contents("file.bin") == data)
        #expect(server.requests.count == 1 && server.requests[0].header("Range") == nil)
        if kind == "hard-link" { #expect(contents("other") == prefix, "the other name's file was not written through the link") }
    }

    @Test("A record others may read or write is not trusted: the partial file is not resumed")
    func recordNotOurs() async throws {
        let server = try server()
        defer { server.stop() }
        let url = "\(server.origin)/file.bin"
        let partialPath = scratch.file(".file.bin.pinpath-partial")
        try data.prefix(1000).write(to: URL(fileURLWithPath: partialPath))
        #expect(chmod(partialPath, 0o600) == 0)
        let recordPath = scratch.file(".file.bin.pinpath-partial.json")
        let record = try #require(PartialRecord(url: url, headers: ["ETag": "\"v1\""], length: Int64(data.count)))
        try record.write(to: recordPath)
        #expect(chmod(recordPath, 0o666) == 0)
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let result = try await session.download(get(url), to: scratch.file("file.bin"), download: DownloadOptions(resume: true))
        #expect(result.resumedFrom == nil && contents("file.bin") == data)
        #expect(server.requests.count == 1 && server.requests[0].header("Range") == nil)
    }

    @Test("A transfer that cannot be resumed (no ETag, no Last-Modified) dropped half way: no partial file is kept")
    func unresumableDropLeavesNothing() async throws {
        let server = try server([.noValidators, .dropAfter(bytes: Self.half)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let error = try await downloadFailure("a dropped transfer succeeded") {
            try await session.download(get("\(server.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        #expect(error.code == .protocolError || error.code == .transferFailed, "\(error)")
        #expect(error.message.contains("was left as it was") && !error.message.contains("kept"), "\(error.message)")
        #expect(!exists("file.bin") && !exists(".file.bin.pinpath-partial") && !exists(".file.bin.pinpath-partial.json"))
        #expect(server.requests.count == 1, "no reconnection without a validator")
    }

    @Test("A resumable transfer dropped: the partial file is kept, and the library's message names no command-line flag")
    func resumableDropKeepsPartial() async throws {
        let server = try server([.dropAfter(bytes: Self.half)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let error = try await downloadFailure("a dropped transfer succeeded") {
            try await session.download(
                get("\(server.origin)/file.bin"), to: scratch.file("file.bin"), download: DownloadOptions(reconnects: 0))
        }
        let partial = try #require(contents(".file.bin.pinpath-partial"))
        #expect(
            error.message.contains("\(partial.count) bytes are kept in") && error.message.contains("for a resumption"), "\(error.message)")
        #expect(!error.message.contains("--"), "\(error.message)")
    }

    @Test("A Content-Range with a terminal escape reaches the error's message escaped: invalid_response, no raw control")
    func contentRangeEscaped() async throws {
        let hostile = "bytes 5-9/10\u{1B}]0;PWNED\u{07}"
        let server = try server([.dropAfter(bytes: Self.half), .contentRange(hostile)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let error = try await downloadFailure("a hostile Content-Range was accepted") {
            try await session.download(get("\(server.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        #expect(error.code == .invalidResponse, "\(error)")
        #expect(error.message.contains(#"bytes 5-9/10\x1b]0;PWNED\x07"#), "\(error.message)")
        #expect(!error.message.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(error.message.debugDescription)")
        #expect(server.requests.count == 2 && server.requests[1].header("Range") != nil, "the hostile field came with the resumption")
    }

    /// The second attacker review: the sum of the partial file's length and a resumption's Content-Length near
    /// Int64.max trapped on libcurl's thread (the whole process died), from the progress report.
    @Test("A resumption announcing a Content-Length near Int64.max, with progress reported: invalid_response, no crash")
    func hugeLengthWithProgress() async throws {
        let server = try server([.dropAfter(bytes: Self.half), .rangeContentLength("9223372036854775807")])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let reports = ProgressLog()
        let error = try await downloadFailure("a resumption announcing 2^63-1 bytes was accepted") {
            try await session.download(
                get("\(server.origin)/file.bin"), to: scratch.file("file.bin"), download: DownloadOptions(progress: reports.append))
        }
        #expect(error.code == .invalidResponse, "\(error)")
        #expect(server.requests.count == 2 && server.requests[1].header("Range") != nil, "the huge length came with the resumption")
        #expect(!exists("file.bin"))
    }

    @Test(
        "DownloadOptions.timeout bounds the whole download: a server trickling 1 byte a second fails timed_out, the destination untouched")
    func trickleTimedOut() async throws {
        let small = scratch.file("small.bin")
        try Data(repeating: 0x61, count: 1000).write(to: URL(fileURLWithPath: small))
        let server = try RangeFileServer(serving: small, certificate: pinned, misbehaviours: [.trickle], directory: scratch.path)
        defer { server.stop() }
        try Data("old good file".utf8).write(to: URL(fileURLWithPath: scratch.file("file.bin")))
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let started = ContinuousClock.now
        let outcome = await downloadOutcome {
            try await session.download(
                get("\(server.origin)/file.bin"), to: scratch.file("file.bin"), download: DownloadOptions(timeout: .seconds(2)))
        }
        let elapsed = ContinuousClock.now - started
        guard case .failure(let error) = outcome else {
            Issue.record("a 1000-second trickle finished within its limit")
            return
        }
        #expect(error.code == .timedOut && error.message.contains("took longer than"), "\(error)")
        #expect(elapsed < .seconds(20), "ended after \(elapsed)")
        #expect(contents("file.bin") == Data("old good file".utf8))
        #expect(server.requests.count == 1, "no reconnection past the limit")
    }

    @Test("A wrong SHA-256: digest_mismatch, the old file kept, no partial file left")
    func digestMismatch() async throws {
        try Data("old good file".utf8).write(to: URL(fileURLWithPath: scratch.file("file.bin")))
        let server = try server()
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let wrong = String(repeating: "0", count: 64)
        let error = try await downloadFailure("a wrong digest was accepted") {
            try await session.download(
                get("\(server.origin)/file.bin"), to: scratch.file("file.bin"), download: DownloadOptions(expectedSHA256: wrong))
        }
        #expect(error.code == .digestMismatch && error.message.contains(sha256), "\(error)")
        #expect(contents("file.bin") == Data("old good file".utf8))
        #expect(!exists(".file.bin.pinpath-partial") && !exists(".file.bin.pinpath-partial.json"))
    }

    @Test(
        "A destination that is a directory, a symbolic link (to a file, dangling) or a FIFO is refused before any request",
        arguments: ["directory", "link", "dangling", "fifo", "partial-link"])
    func refusedDestination(kind: String) async throws {
        let recorder = try RecordingServer(directory: scratch.path)
        defer { recorder.stop() }
        let target = scratch.file("target")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: target))
        let destination = scratch.file("file.bin")
        switch kind {
        case "directory": try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
        case "link": try FileManager.default.createSymbolicLink(atPath: destination, withDestinationPath: target)
        case "dangling": try FileManager.default.createSymbolicLink(atPath: destination, withDestinationPath: scratch.file("nowhere"))
        case "fifo": #expect(mkfifo(destination, 0o600) == 0)
        default: try FileManager.default.createSymbolicLink(atPath: scratch.file(".file.bin.pinpath-partial"), withDestinationPath: target)
        }
        let session = try Session()
        defer { session.shutdown() }
        let error = try await downloadFailure("\(kind): the download went ahead") {
            try await session.download(get("\(recorder.origin)/file.bin"), to: destination, download: DownloadOptions(resume: true))
        }
        #expect(error.code == .output && error.message.contains(destination), "\(error)")
        #expect(recorder.requests.isEmpty)
        #expect(contents("target") == Data("precious".utf8))
        #expect(!exists("nowhere"))
    }

    @Test("Only a GET download resumes: resume asked for a PUT fails usage with nothing sent")
    func resumeNeedsGet() async throws {
        let server = try server()
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let put = SessionRequest(method: .put, url: URL(string: "\(server.origin)/file.bin")!, body: .bytes(Array("x".utf8)))
        let error = try await downloadFailure("a PUT download was resumed") {
            try await session.download(put, to: scratch.file("file.bin"), download: DownloadOptions(resume: true))
        }
        #expect(error.code == .usage && error.message.contains("only a GET without a body can be resumed"), "\(error)")
        #expect(server.requests.isEmpty && !exists("file.bin"))
    }

    /// The third attacker review: a GET with a body was replayed by each reconnection and kept a partial file
    /// that `--continue` then refused to use.
    @Test("A GET with a body that drops is not reconnected, and keeps no partial file")
    func getWithBodyNotReplayed() async throws {
        let server = try server([.dropAfter(bytes: Self.half)])
        defer { server.stop() }
        let session = try pki.loopbackSession(pins: ["ip"])
        defer { session.shutdown() }
        let request = SessionRequest(method: .get, url: URL(string: "\(server.origin)/file.bin")!, body: .bytes(Array("x".utf8)))
        let error = try await downloadFailure("a dropped GET with a body succeeded") {
            try await session.download(request, to: scratch.file("file.bin"))
        }
        #expect(error.code == .protocolError, "\(error)")
        #expect(server.requests.count == 1, "not replayed: \(server.requests.count) requests")
        #expect(!exists("file.bin") && !exists(".file.bin.pinpath-partial") && !exists(".file.bin.pinpath-partial.json"))
    }

    @Test("A status other than 2xx writes nothing: unexpected_status, no file, no partial file")
    func refusedStatus() async throws {
        let recorder = try RecordingServer(directory: scratch.path, failing: (status: 404, count: Int.max))
        defer { recorder.stop() }
        let session = try Session()
        defer { session.shutdown() }
        let error = try await downloadFailure("a 404 was downloaded") {
            try await session.download(get("\(recorder.origin)/file.bin"), to: scratch.file("file.bin"))
        }
        #expect(error.code == .unexpectedStatus && error.response?.statusCode == 404, "\(error)")
        #expect(!exists("file.bin") && !exists(".file.bin.pinpath-partial") && !exists(".file.bin.pinpath-partial.json"))
    }
}

/// What a download ended with, as a value the test can look into.
func downloadOutcome(_ body: () async throws -> DownloadResult) async -> Result<DownloadResult, HTTPError> {
    do {
        return .success(try await body())
    } catch let error as HTTPError {
        return .failure(error)
    } catch {
        return .failure(HTTPError(.transferFailed, "not an HTTPError: \(error)"))
    }
}

/// The download's error; when it succeeded, an issue recorded as `unexpected` and the test stopped.
func downloadFailure(
    _ unexpected: Comment, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> DownloadResult
) async throws -> HTTPError {
    let failure: HTTPError? = if case .failure(let error) = await downloadOutcome(body) { error } else { nil }
    return try #require(failure, unexpected, sourceLocation: sourceLocation)
}

/// Progress reports, collected from libcurl's thread.
final class ProgressLog: Sendable {
    private let log = Mutex<[DownloadProgress]>([])
    func append(_ progress: DownloadProgress) { log.withLock { $0.append(progress) } }
    var values: [DownloadProgress] { log.withLock { $0 } }
}
