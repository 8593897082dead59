import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

@Suite("Multipart form data")
struct MultipartFormDataTests {
    /// A directory of its own for each test, removed afterwards.
    final class Scratch {
        private let scratch: TemporaryDirectory
        var directory: String { scratch.path }
        init() throws { scratch = try TemporaryDirectory("multipart") }

        func file(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = "\(directory)/\(name)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    struct Part: Equatable {
        var headers: [String]
        var content: [UInt8]
    }

    /// Reads one whole pass with a buffer of `chunk` bytes.
    static func drain(_ request: SessionRequest, chunk: Int = 65_536) throws -> [UInt8] {
        guard case .stream(let source) = request.body else { throw HTTPError(.invalidBody, "not a stream") }
        let reader = try source.makeReader()
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: chunk)
        while true {
            let n = try buffer.withUnsafeMutableBytes { (pointer) throws(HTTPError) in try reader.read(into: pointer) }
            if n == 0 { return output }
            output += buffer[..<n]
        }
    }

    /// Splits a body back into parts by RFC 2046's rules: `--B CRLF` first, `CRLF --B CRLF` between parts,
    /// `CRLF --B-- CRLF` last; each part's headers end at the first blank line.
    static func parse(_ body: [UInt8], boundary: String) throws -> [Part] {
        let first = Array("--\(boundary)\r\n".utf8)
        let separator = Array("\r\n--\(boundary)\r\n".utf8)
        let close = Array("\r\n--\(boundary)--\r\n".utf8)
        try #require(body.starts(with: first))
        try #require(body.suffix(close.count).elementsEqual(close))
        var rest = Array(body[first.count..<(body.count - close.count)])
        var chunks: [[UInt8]] = []
        while let range = rest.firstRange(of: separator) {
            chunks.append(Array(rest[..<range.lowerBound]))
            rest = Array(rest[range.upperBound...])
        }
        chunks.append(rest)
        return try chunks.map { chunk in
            let blank = try #require(chunk.firstRange(of: Array("\r\n\r\n".utf8)))
            let headers = String(decoding: chunk[..<blank.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            return Part(headers: headers, content: Array(chunk[blank.upperBound...]))
        }
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test("Fields and streamed files parse back; Content-Length is the bytes produced; a second pass is identical")
    func roundTrip() throws {
        let scratch = try Scratch()
        let big = Self.randomBytes(300_000)
        let bigPath = try scratch.file("data.bin", big)
        let textPath = try scratch.file("notes.TXT", Array("hello\r\n--not a boundary\r\n".utf8))
        let emptyPath = try scratch.file("empty.json", [])
        var form = MultipartFormData()
        form.append(name: "greeting", value: "hé llo")
        try form.appendFile(name: "blob", path: bigPath)
        try form.appendFile(name: "notes", path: textPath, filename: "renamed \"q\".txt")
        try form.appendFile(name: "empty", path: emptyPath, contentType: "application/x-custom")
        let request = try HTTPRequestSerializer().multipartRequest(
            .post, "http://h/upload", parameters: ["p": ["q": 1], "n": nil], form: form)

        #expect(form.boundary.wholeMatch(of: /Boundary\+[0-9A-F]{16}/) != nil)
        #expect(request.headers["Content-Type"] == "multipart/form-data; boundary=\(form.boundary)")
        let first = try Self.drain(request)
        #expect(request.headers["Content-Length"] == String(first.count))
        #expect(request.body?.count == first.count)
        #expect(try Self.drain(request, chunk: 7) == first)
        #expect(try Self.drain(request, chunk: 1) == first)

        let parts = try Self.parse(first, boundary: form.boundary)
        #expect(
            parts == [
                Part(headers: [#"Content-Disposition: form-data; name="n""#], content: []),
                Part(headers: [#"Content-Disposition: form-data; name="p[q]""#], content: Array("1".utf8)),
                Part(headers: [#"Content-Disposition: form-data; name="greeting""#], content: Array("hé llo".utf8)),
                Part(
                    headers: [
                        #"Content-Disposition: form-data; name="blob"; filename="data.bin""#, "Content-Type: application/octet-stream",
                    ], content: big),
                Part(
                    headers: [
                        #"Content-Disposition: form-data; name="notes"; filename="renamed %22q%22.txt""#, "Content-Type: text/plain",
                    ],
                    content: Array("hello\r\n--not a boundary\r\n".utf8)),
                Part(
                    headers: [
                        #"Content-Disposition: form-data; name="empty"; filename="empty.json""#, "Content-Type: application/x-custom",
                    ], content: []),
            ])
    }

    @Test("Files are read when the body is sent, not when the form is built")
    func lazy() throws {
        let scratch = try Scratch()
        let path = try scratch.file("f.txt", Array("before".utf8))
        var form = MultipartFormData(boundary: "B")
        try form.appendFile(name: "f", path: path)
        let request = try HTTPRequestSerializer().multipartRequest(.put, "http://h/", form: form)
        try Data("after!".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try Self.parse(Self.drain(request), boundary: "B").first?.content == Array("after!".utf8))
    }

    @Test("Names with quotes and line breaks cannot break out of their header")
    func escapedNames() throws {
        var form = MultipartFormData(boundary: "B")
        form.append(name: "a\"\r\nX-Injected: 1", value: "v")
        let request = try HTTPRequestSerializer().multipartRequest(.post, "http://h/", form: form)
        let parts = try Self.parse(Self.drain(request), boundary: "B")
        #expect(parts.first?.headers == [#"Content-Disposition: form-data; name="a%22%0D%0AX-Injected: 1""#])
    }

    @Test(
        "Content types are guessed from a few extensions",
        arguments: [
            ("a.json", "application/json"), ("b.PNG", "image/png"), ("c.tar.gz", "application/gzip"), ("d", "application/octet-stream"),
            (".bashrc", "application/octet-stream"), ("e.unknown", "application/octet-stream"), ("f.jpeg", "image/jpeg"),
            ("g.txt", "text/plain"),
        ])
    func guessedTypes(filename: String, type: String) {
        #expect(MultipartFormData.guessContentType(filename: filename) == type)
    }

    @Test("An empty form sends no body; GET cannot carry a form")
    func emptyAndGet() throws {
        let request = try HTTPRequestSerializer().multipartRequest(.post, "http://h/", form: MultipartFormData())
        #expect(request.body == nil)
        #expect(request.headers["Content-Type"] == nil)
        let error = #expect(throws: HTTPError.self) {
            try HTTPRequestSerializer().multipartRequest(.get, "http://h/", form: MultipartFormData())
        }
        #expect(error?.code == .invalidBody)
    }

    @Test("A content type with a line break is refused")
    func badContentType() throws {
        let scratch = try Scratch()
        let path = try scratch.file("f", [1])
        var form = MultipartFormData()
        let error = #expect(throws: HTTPError.self) { try form.appendFile(name: "f", path: path, contentType: "text/plain\r\nX: 1") }
        #expect(error?.code == .invalidHeader)
    }

    enum Unreadable: String, CaseIterable, Sendable { case missing, directory, fifo, characterDevice }

    @Test("An unreadable file is unreadableFile naming the path when it is added", arguments: Unreadable.allCases)
    func unreadable(_ kind: Unreadable) throws {
        let scratch = try Scratch()
        let path: String
        switch kind {
        case .missing: path = "\(scratch.directory)/nope.txt"
        case .directory: path = scratch.directory
        case .fifo:
            path = "\(scratch.directory)/fifo"
            try #require(mkfifo(path, 0o600) == 0)
        case .characterDevice: path = "/dev/zero"
        }
        var form = MultipartFormData()
        let error = #expect(throws: HTTPError.self) { try form.appendFile(name: "f", path: path) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains(path) == true)
    }

    @Test("A file without read permission is unreadableFile", .enabled(if: geteuid() != 0, "root reads every file, whatever its mode"))
    func noPermission() throws {
        let scratch = try Scratch()
        let path = try scratch.file("secret", [1, 2, 3])
        try #require(chmod(path, 0) == 0)
        var form = MultipartFormData()
        let error = #expect(throws: HTTPError.self) { try form.appendFile(name: "f", path: path) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains("Permission denied") == true)
    }

    enum Change: String, CaseIterable, Sendable { case shrinks, grows, disappears }

    @Test("A file that changes size or disappears after it was added fails the read, naming the path", arguments: Change.allCases)
    func changedWhileSending(_ change: Change) throws {
        let scratch = try Scratch()
        let path = try scratch.file("f.bin", Self.randomBytes(100_000))
        var form = MultipartFormData(boundary: "B")
        try form.appendFile(name: "f", path: path)
        let request = try HTTPRequestSerializer().multipartRequest(.post, "http://h/", form: form)
        switch change {
        case .shrinks: try #require(truncate(path, 50_000) == 0)
        case .grows: try #require(truncate(path, 100_001) == 0)
        case .disappears: try FileManager.default.removeItem(atPath: path)
        }
        let error = #expect(throws: HTTPError.self) { try Self.drain(request) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains(path) == true)
    }

    @Test("A file that shrinks in the middle of a pass fails that pass")
    func shrinksMidRead() throws {
        let scratch = try Scratch()
        let path = try scratch.file("f.bin", Self.randomBytes(200_000))
        var form = MultipartFormData(boundary: "B")
        try form.appendFile(name: "f", path: path)
        let request = try HTTPRequestSerializer().multipartRequest(.post, "http://h/", form: form)
        guard case .stream(let source) = request.body else {
            Issue.record("not a stream")
            return
        }
        let reader = try source.makeReader()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = try buffer.withUnsafeMutableBytes { (pointer) throws(HTTPError) in try reader.read(into: pointer) }
        #expect(n == 65_536)
        try #require(truncate(path, 70_000) == 0)
        let error = #expect(throws: HTTPError.self) {
            while try buffer.withUnsafeMutableBytes({ (pointer) throws(HTTPError) in try reader.read(into: pointer) }) > 0 {}
        }
        #expect(error?.message.contains("shrank") == true)
    }
}
