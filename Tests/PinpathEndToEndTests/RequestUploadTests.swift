import Foundation
import PinpathTestSupport
import Testing

/// `pinpath request URL -T FILE` as a user runs it: the file's bytes as the body over pinned https to
/// ``BodyServer``'s `/upload` (64 KiB read every 20 ms, answered `<count> <sha256>`), its progress bar under a
/// pseudo-terminal, and the files refused before anything is sent.
@Suite("pinpath request -T")
final class RequestUploadTests {
    let scratch: TemporaryDirectory
    let pki = TestPKI.shared
    /// 4 MiB of random bytes, and their SHA-256 by `sha256sum`.
    let source: String
    let sha256: String
    static let size = 4 << 20

    init() throws {
        scratch = try TemporaryDirectory("upload-cli")
        source = scratch.file("upload.bin")
        _ = try Shell.check(["dd", "if=/dev/urandom", "of=\(source)", "bs=1M", "count=\(Self.size >> 20)", "status=none"])
        sha256 = String(try Shell.check(["sha256sum", source]).prefix(64))
    }

    func server() throws -> BodyServer {
        try BodyServer(certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: scratch.path)
    }
    /// The trust store and the pin of the loopback leaf.
    func trust() throws -> [String] { ["--ca-file", pki.path("store"), "--pin", "sha256/\(try pki.opensslPin("ip"))"] }

    @Test("-T sends the file with PUT: exit 0, the server's count and SHA-256 are the file's; no bar when stderr is a pipe")
    func uploads() throws {
        let server = try server()
        defer { server.stop() }
        let result = try Shell.run([Shell.pinpath, "request", "\(server.origin)/upload", "-T", source] + (try trust()))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "\(Self.size) \(sha256)")
        #expect(server.requests == ["PUT /upload"])
        #expect(!result.stderr.contains("\r") && !result.stderr.contains("\u{1B}"), "\(result.stderr.debugDescription)")
        // --upload-file and -X POST: the same bytes, with the method asked for.
        let posted = try Shell.run(
            [Shell.pinpath, "request", "\(server.origin)/upload", "--upload-file", source, "-X", "POST"] + (try trust()))
        #expect(posted.status == 0 && posted.stdout == "\(Self.size) \(sha256)", "\(posted.stderr)")
        #expect(server.requests.last == "POST /upload")
    }

    @Test("The progress bar of the bytes sent: drawn on a terminal (cleared at the end), not with --json")
    func progressBar() throws {
        let server = try server()
        defer { server.stop() }
        func underTerminal(_ extra: [String]) throws -> String {
            let command = ([Shell.pinpath, "request", "\(server.origin)/upload", "-T", source] + (try trust()) + extra)
                .map { "'\($0)'" }.joined(separator: " ")
            return try Shell.check(["script", "-qec", command, "/dev/null"])
        }
        let drawn = try underTerminal([])
        #expect(
            drawn.contains("\r") && drawn.contains("% [") && drawn.contains(" / 4.0 MiB") && drawn.contains("MiB/s"),
            "\(drawn.debugDescription)")
        #expect(drawn.contains("100% [====================]  4.0 MiB / 4.0 MiB"), "\(drawn.debugDescription)")
        #expect(drawn.contains("\r\u{1B}[K\(Self.size) \(sha256)"), "cleared before the answer: \(drawn.suffix(120).debugDescription)")
        let json = try underTerminal(["--json"])
        #expect(!json.contains("\u{1B}[K") && json.contains("\"status_code\":200"), "\(json.debugDescription)")
    }

    enum Refused: String, CaseIterable, Sendable { case fifo, directory, missing }

    @Test(
        "A FIFO (without waiting for a writer), a directory or a missing file: exit 64, unreadable_file, naming it, nothing sent",
        arguments: Refused.allCases
    )
    func refusedFile(_ kind: Refused) throws {
        let server = try server()
        defer { server.stop() }
        let path = scratch.file("refused-\(kind)")
        switch kind {
        case .fifo: try #require(mkfifo(path, 0o600) == 0)
        case .directory: try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case .missing: break
        }
        let result = try Shell.run([Shell.pinpath, "request", "\(server.origin)/upload", "-T", path] + (try trust()))
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("pinpath: error: unreadable_file: upload file \(path) "), "\(result.stderr)")
        // Scripts read the same category as for a file that fails while it is sent (the third review: it was `usage`).
        let json = try Shell.run([Shell.pinpath, "request", "--json", "\(server.origin)/upload", "-T", path] + (try trust()))
        #expect(json.status == 64 && json.stdout.contains(#""category":"unreadable_file""#), "\(json.stdout)")
        #expect(server.requests.isEmpty, "\(server.requests)")
    }

    @Test("-T with another body is refused (64); with -o the answer goes to the file")
    func combinations() throws {
        for other in [["-d", "x"], ["--json-body", "{}"], ["--form", "k=v"]] {
            let result = try Shell.run([Shell.pinpath, "request", "https://127.0.0.1:1/", "-T", source] + other)
            #expect(result.status == 64 && result.stderr.contains("give one body: -d, --json-body, --form or -T"), "\(result.stderr)")
        }
        let server = try server()
        defer { server.stop() }
        let answer = scratch.file("answer.txt")
        let result = try Shell.run([Shell.pinpath, "request", "\(server.origin)/upload", "-T", source, "-o", answer] + (try trust()))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: answer, encoding: .utf8) == "\(Self.size) \(sha256)")
    }
}
