import Foundation
import PinpathTestSupport
import Testing

/// `pinpath request URL -o FILE [--continue] [--sha256 HEX]` as a user runs it: nginx on loopback serving
/// files with its own ETag and Range handling, a Python file server that drops connections or changes its key,
/// and the failures the issue names (refused destinations, a wrong digest, a full disk), with their exit codes.
@Suite("pinpath request -o")
final class RequestDownloadTests {
    let scratch: TemporaryDirectory
    let pki = TestPKI.shared
    /// 8 MiB of random bytes in `root/file.bin`, and their SHA-256 by `sha256sum`.
    let source: String
    let sha256: String
    static let size = 8 << 20

    init() throws {
        scratch = try TemporaryDirectory("download-cli")
        try FileManager.default.createDirectory(atPath: scratch.file("root"), withIntermediateDirectories: false)
        source = scratch.file("root/file.bin")
        _ = try Shell.check(["dd", "if=/dev/urandom", "of=\(source)", "bs=1M", "count=\(Self.size >> 20)", "status=none"])
        sha256 = String(try Shell.check(["sha256sum", source]).prefix(64))
    }

    var pinned: (leaf: String, key: String, chain: [String]) { (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]) }
    var unpinned: (leaf: String, key: String, chain: [String]) {
        (pki.path("otherip"), pki.path("otherip", "key"), [pki.path("otherinter")])
    }
    /// The trust store and the pin of the loopback leaf.
    func trust() throws -> [String] { ["--ca-file", pki.path("store"), "--pin", "sha256/\(try pki.opensslPin("ip"))"] }

    func request(_ arguments: [String]) throws -> Shell.Result { try Shell.run([Shell.pinpath, "request"] + arguments) }
    func size(_ path: String) -> Int? { (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int }
    func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    @Test("Killed half way from nginx, then --continue: Range and If-Range with nginx's ETag, sha256sum matches")
    func killedAndContinued() async throws {
        // 256 KiB/s for the first run (32 s for the file: time enough to stop it half way on a loaded machine);
        // the resumption, which has a Range, at full speed.
        let nginx = try NginxFileServer(
            root: scratch.file("root"), certificate: pinned, rate: 256 << 10, rangesAtFullSpeed: true, directory: scratch.path)
        defer { nginx.stop() }
        let destination = scratch.file("file.bin")
        let partialPath = scratch.file(".file.bin.pinpath-partial")
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let pid = try Shell.spawn(
            [Shell.pinpath, "request", "\(nginx.origin)/file.bin", "-o", destination] + trust(), stdout: devNull, stderr: devNull)
        let deadline = ContinuousClock.now + .seconds(30)
        while (size(partialPath) ?? 0) < 1 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        let killed = try await Shell.stop(pid, signal: SIGKILL, timeout: .seconds(5))
        #expect(killed == 128 + SIGKILL)
        #expect(!exists(destination))
        let partial = try #require(size(partialPath))
        #expect(partial >= 1 << 20 && partial < Self.size)

        let resumed = try request(["\(nginx.origin)/file.bin", "-o", destination, "--continue", "--sha256", sha256, "--json"] + trust())
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(try Shell.check(["sha256sum", destination]).hasPrefix(sha256))
        #expect(!exists(partialPath) && !exists(partialPath + ".json"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(resumed.stdout.utf8)) as? [String: Any])
        let download = try #require(summary["download"] as? [String: Any], "\(resumed.stdout)")
        #expect(
            download["resumed"] as? Bool == true && download["resumed_from"] as? Int == partial && download["sha256"] as? String == sha256)
        #expect(download["bytes"] as? Int == Self.size && download["path"] as? String == destination)
        let last = try #require(nginx.requests.last)
        #expect(last.status == 206 && last.range == "bytes=\(partial)-")
        let etag = try #require(last.ifRange)
        #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"), "nginx's strong ETag: \(etag)")
    }

    @Test("Every reconnection dropped: exit 3, the destination absent, the partial kept; --continue completes it")
    func droppedThenContinued() throws {
        // 1 transfer and 3 reconnections, each dropped after 1 MiB; the next run's transfer goes through.
        let server = try RangeFileServer(
            serving: source, certificate: pinned, misbehaviours: [.dropAfter(bytes: 1 << 20, responses: 4)], directory: scratch.path)
        defer { server.stop() }
        let destination = scratch.file("file.bin")
        let first = try request(["\(server.origin)/file.bin", "-o", destination] + trust())
        #expect(first.status == 3, "\(first.stderr)")
        #expect(first.stderr.contains("\(destination) was left as it was") && first.stderr.contains("--continue"), "\(first.stderr)")
        #expect(!exists(destination))
        let partial = try #require(size(scratch.file(".file.bin.pinpath-partial")))
        #expect(partial >= 4 << 20 - 4 && partial <= 4 << 20)

        let second = try request(["\(server.origin)/file.bin", "-o", destination, "--continue", "--sha256", sha256] + trust())
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.isEmpty && second.stderr.isEmpty, "no bar when standard error is not a terminal")
        #expect(try Shell.check(["sha256sum", destination]).hasPrefix(sha256))
        let requests = server.requests
        #expect(requests.count == 5)
        #expect(requests.last?.header("Range") == "bytes=\(partial)-" && requests.last?.header("If-Range") == "\"v1\"")
    }

    @Test("The attack from the command line: --continue to the same port now served with an unpinned key: exit 1, nothing written")
    func continueToSwappedKey() throws {
        let first = try RangeFileServer(
            serving: source, certificate: pinned, misbehaviours: [.dropAfter(bytes: 1 << 20, responses: 4)], directory: scratch.path)
        let destination = scratch.file("file.bin")
        let url = "\(first.origin)/file.bin"
        #expect(try request([url, "-o", destination] + trust()).status == 3)
        first.stop()
        let partialPath = scratch.file(".file.bin.pinpath-partial")
        let before = try #require(FileManager.default.contents(atPath: partialPath))
        let impostor = try RangeFileServer(serving: source, certificate: unpinned, port: first.port, directory: scratch.path)
        defer { impostor.stop() }
        let second = try request([url, "-o", destination, "--continue"] + trust())
        #expect(second.status == 1, "\(second.stderr)")
        #expect(second.stderr.contains("policy_rejected"), "\(second.stderr)")
        #expect(FileManager.default.contents(atPath: partialPath) == before)
        #expect(!exists(destination))
        #expect(impostor.connections == 1 && impostor.requests.isEmpty)
    }

    @Test(
        "Refusals: --continue or --sha256 without -o, a bad digest, -o with HEAD, -o -, --continue of a request that is not a GET (exit 64, nothing sent)",
        arguments: [
            (["--continue"], "--continue resumes a download to a file: give -o FILE"),
            (["--sha256", String(repeating: "a", count: 64)], "--sha256 checks a download to a file: give -o FILE"),
            (["-o", "OUT", "--sha256", "xyz"], "--sha256 \"xyz\" is not a SHA-256: give 64 hexadecimal digits"),
            (["-o", "OUT", "-X", "HEAD"], "-o writes a response body, and a HEAD response has none: use GET"),
            (["-o", "-"], "-o - is not supported: leave out -o to write the body to standard output"),
            (["-o", "OUT", "--continue", "-X", "PUT"], "--continue resumes a GET download (Range applies to GET alone)"),
            (["-o", "OUT", "--continue", "-d", "x=1"], "--continue resumes a GET download (Range applies to GET alone)"),
        ])
    func refusals(arguments: [String], message: String) throws {
        let recorder = try RecordingServer(directory: scratch.path)
        defer { recorder.stop() }
        let result = try request(["\(recorder.origin)/file.bin"] + arguments.map { $0 == "OUT" ? scratch.file("out") : $0 })
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(recorder.requests.isEmpty && !exists(scratch.file("out")))
    }

    @Test(
        "A destination that is a directory, a symbolic link (to a file, dangling) or a FIFO: exit 73 naming it, nothing sent",
        arguments: ["directory", "link", "dangling", "fifo"])
    func refusedDestination(kind: String) throws {
        let recorder = try RecordingServer(directory: scratch.path)
        defer { recorder.stop() }
        let destination = scratch.file("file.bin")
        switch kind {
        case "directory": try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
        case "link": try FileManager.default.createSymbolicLink(atPath: destination, withDestinationPath: source)
        case "dangling": try FileManager.default.createSymbolicLink(atPath: destination, withDestinationPath: scratch.file("nowhere"))
        default: #expect(mkfifo(destination, 0o600) == 0)
        }
        let result = try request(["\(recorder.origin)/file.bin", "-o", destination])
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("pinpath: error: output: cannot download to \(destination)"), "\(result.stderr)")
        #expect(recorder.requests.isEmpty)
        #expect(try Shell.check(["sha256sum", source]).hasPrefix(sha256) && !exists(scratch.file("nowhere")))
    }

    @Test("--sha256 that does not match: exit 6 (digest_mismatch), the old file kept")
    func digestMismatch() throws {
        let server = try RangeFileServer(serving: source, certificate: pinned, directory: scratch.path)
        defer { server.stop() }
        let destination = scratch.file("file.bin")
        try "old good file".write(toFile: destination, atomically: true, encoding: .utf8)
        let wrong = String(repeating: "f", count: 64)
        let result = try request(["\(server.origin)/file.bin", "-o", destination, "--sha256", wrong, "--json"] + trust())
        #expect(result.status == 6, "\(result.stderr)")
        #expect(result.stderr.contains("digest_mismatch") && result.stderr.contains(sha256), "\(result.stderr)")
        #expect(result.stdout.contains("\"category\":\"digest_mismatch\""), "\(result.stdout)")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "old good file")
        #expect(!exists(scratch.file(".file.bin.pinpath-partial")))
    }

    @Test(
        "A disk that fills up: exit 74 naming the destination and ENOSPC, the old file untouched, no partial file left",
        .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func diskFull() throws {
        let server = try RangeFileServer(serving: source, certificate: pinned, directory: scratch.path)
        defer { server.stop() }
        let mountPoint = scratch.file("tmpfs")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        _ = try Shell.check(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint])
        defer { _ = try? Shell.check(["umount", mountPoint]) }
        let destination = "\(mountPoint)/file.bin"
        try "old good file".write(toFile: destination, atomically: true, encoding: .utf8)
        let result = try request(["\(server.origin)/file.bin", "-o", destination] + trust())
        #expect(result.status == 74, "\(result.stderr)")
        #expect(result.stderr.contains("pinpath: error: output: ") && result.stderr.contains(destination), "\(result.stderr)")
        #expect(result.stderr.contains("No space left on device (ENOSPC)"), "\(result.stderr)")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "old good file")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint) == ["file.bin"])
    }

    /// The attack of a shared directory: `share` (mode 1777, as /tmp) in which `nobody` planted `.f.pinpath-partial`
    /// (`planted` bytes of their own, mode 0666 under umask 0) and a record for it naming the URL's SHA-256, the
    /// server's ETag and the file's length: all public facts. Returns the server, the file it serves, the URL and
    /// the destination.
    func plantedShare(planted: Int) throws -> (server: RangeFileServer, served: Data, url: String, destination: String) {
        let served = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try served.write(to: URL(fileURLWithPath: scratch.file("root/f")))
        let server = try RangeFileServer(serving: scratch.file("root/f"), certificate: pinned, directory: scratch.path)
        let url = "\(server.origin)/f"
        #expect(chmod(scratch.path, 0o711) == 0)
        let share = scratch.file("share")
        try FileManager.default.createDirectory(atPath: share, withIntermediateDirectories: false)
        #expect(chmod(share, 0o1777) == 0)
        let urlSHA256 = String(try Shell.check(["sha256sum"], input: url).prefix(64))
        try Data(repeating: 0x58, count: planted).write(to: URL(fileURLWithPath: scratch.file("planted")))
        try #"{"version":1,"url_sha256":"\#(urlSHA256)","validator":"\"v1\"","length":300000}"#
            .write(toFile: scratch.file("planted.json"), atomically: true, encoding: .utf8)
        #expect(chmod(scratch.file("planted"), 0o644) == 0 && chmod(scratch.file("planted.json"), 0o644) == 0)
        _ = try Shell.check(
            Self.asNobody + [
                "/bin/sh", "-c",
                "umask 0; cat \(scratch.file("planted")) > \(share)/.f.pinpath-partial; cat \(scratch.file("planted.json")) > \(share)/.f.pinpath-partial.json",
            ])
        return (server, served, url, "\(share)/f")
    }

    static let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]

    func owner(_ path: String) -> uid_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_uid : nil
    }

    @Test(
        "The attack of a shared directory: nobody's planted partial file and record are not resumed by root; removed, the file is the server's and root's",
        .enabled(if: getuid() == 0, "needs root, to plant files as another user (setpriv)"),
        arguments: [240, 300_000])
    func plantedPartialAsRoot(planted: Int) throws {
        let (server, served, url, destination) = try plantedShare(planted: planted)
        defer { server.stop() }
        #expect(owner(destination.replacingOccurrences(of: "/f", with: "/.f.pinpath-partial")) == 65534)
        let result = try request([url, "-o", destination, "--continue"] + trust())
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.contents(atPath: destination) == served, "the file is the server's, not a byte of nobody's")
        #expect(owner(destination) == 0, "the file is root's, not an inode nobody owns")
        #expect(server.requests.count == 1 && server.requests[0].header("Range") == nil, "started afresh")
        #expect(!exists(destination.replacingOccurrences(of: "/f", with: "/.f.pinpath-partial")))
    }

    @Test(
        "The attack of a shared directory against another user: nobody's partial file cannot be removed: exit 73 naming it and its owner, nothing sent, nothing written to it",
        .enabled(if: getuid() == 0, "needs root, to run both users (setpriv)"))
    func plantedPartialAsOtherUser() throws {
        let (server, _, url, destination) = try plantedShare(planted: 240)
        defer { server.stop() }
        let partialPath = destination.replacingOccurrences(of: "/f", with: "/.f.pinpath-partial")
        // The victim, uid 65533, reads the CA file from a copy it can read.
        let store = scratch.file("store.pem")
        try FileManager.default.copyItem(atPath: pki.path("store"), toPath: store)
        #expect(chmod(store, 0o644) == 0)
        let victim = ["/usr/bin/setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", "--"]
        let result = try Shell.run(
            victim + [
                Shell.pinpath, "request", url, "-o", destination, "--continue", "--ca-file", store, "--pin",
                "sha256/\(try pki.opensslPin("ip"))",
            ])
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("\(partialPath) is not yours (owned by uid 65534, not you)"), "\(result.stderr)")
        #expect(server.requests.isEmpty, "nothing sent")
        #expect(FileManager.default.contents(atPath: partialPath) == Data(repeating: 0x58, count: 240), "nobody's file unchanged")
        #expect(!exists(destination))
    }

    @Test("--timeout bounds a download: a server trickling 1 byte a second of 1000 ends exit 3 timed_out within seconds, FILE untouched")
    func trickleBoundedByTimeout() throws {
        try Data(repeating: 0x61, count: 1000).write(to: URL(fileURLWithPath: scratch.file("root/small")))
        let server = try RangeFileServer(
            serving: scratch.file("root/small"), certificate: pinned, misbehaviours: [.trickle], directory: scratch.path)
        defer { server.stop() }
        let destination = scratch.file("small")
        try "old good file".write(toFile: destination, atomically: true, encoding: .utf8)
        let started = ContinuousClock.now
        // `timeout 30`: without the fix the download would run for 1000 s.
        let result = try Shell.run(
            ["timeout", "30", Shell.pinpath, "request", "\(server.origin)/small", "-o", destination, "--timeout", "3s"] + trust())
        let elapsed = ContinuousClock.now - started
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("pinpath: error: timed_out: ") && result.stderr.contains("took longer than"), "\(result.stderr)")
        #expect(elapsed < .seconds(15), "ended after \(elapsed)")
        #expect(try String(contentsOfFile: destination, encoding: .utf8) == "old good file")
    }

    @Test("The progress bar: drawn on a terminal (size, rate, ETA, cleared at the end), not with --json")
    func progressBar() throws {
        let nginx = try NginxFileServer(root: scratch.file("root"), certificate: pinned, rate: 8 << 20, directory: scratch.path)
        defer { nginx.stop() }
        func underTerminal(_ extra: [String]) throws -> String {
            let command = ([Shell.pinpath, "request", "\(nginx.origin)/file.bin", "-o", scratch.file("file.bin")] + (try trust()) + extra)
                .map { "'\($0)'" }.joined(separator: " ")
            return try Shell.check(["script", "-qec", command, "/dev/null"])
        }
        let drawn = try underTerminal([])
        #expect(
            drawn.contains("\r") && drawn.contains("% [") && drawn.contains(" / 8.0 MiB") && drawn.contains("MiB/s"),
            "\(drawn.debugDescription)")
        #expect(drawn.contains("ETA "), "\(drawn.debugDescription)")
        #expect(drawn.hasSuffix("\r\u{1B}[K"), "cleared at the end: \(drawn.suffix(40).debugDescription)")
        let json = try underTerminal(["--json"])
        #expect(!json.contains("\u{1B}[K") && json.contains("\"download\""), "\(json.debugDescription)")
    }
}
