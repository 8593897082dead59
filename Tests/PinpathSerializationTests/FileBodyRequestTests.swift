import Foundation
import Glibc
import PinpathTestSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

/// `HTTPRequestSerializer.request(_:_:bodyFromFile:)`: a file's bytes as the whole body (issue 32, the upload
/// of AFNetworking's `uploadTaskWithRequest:fromFile:progress:`), with the rules of a form's files. Sent to a
/// real server in `FileUploadTests` and by `pinpath request -T` in `RequestUploadTests`.
@Suite("A file as the request body")
struct FileBodyRequestTests {
    typealias Scratch = MultipartFormDataTests.Scratch

    @Test("The body is the file's bytes, streamed, measured when built; octet-stream unless the headers set a type")
    func bodyIsTheFile() throws {
        let scratch = try Scratch()
        let bytes = MultipartFormDataTests.randomBytes(300_001)
        let path = try scratch.file("image.bin", bytes)
        let request = try HTTPRequestSerializer().request(.put, "http://h/upload", bodyFromFile: path)
        guard case .stream = request.body else {
            Issue.record("the file is not streamed")
            return
        }
        #expect(request.method == .put)
        #expect(request.headers["Content-Type"] == "application/octet-stream")
        #expect(request.headers["Content-Length"] == "300001")
        #expect(try MultipartFormDataTests.drain(request, chunk: 4096) == bytes)
        #expect(try MultipartFormDataTests.drain(request) == bytes, "a second pass (a redirect, a retry) is the same")

        var headers = HeaderFields()
        headers["Content-Type"] = "application/x-tar"
        let typed = try HTTPRequestSerializer().request(.post, "http://h/", bodyFromFile: path, headers: headers)
        #expect(typed.headers["Content-Type"] == "application/x-tar")
        let empty = try HTTPRequestSerializer().request(.put, "http://h/", bodyFromFile: try scratch.file("empty", []))
        #expect(empty.headers["Content-Length"] == "0")
        #expect(try MultipartFormDataTests.drain(empty).isEmpty)
    }

    @Test(
        "A file that is missing, a directory, a FIFO (no writer: no wait) or a device is unreadableFile naming it",
        arguments: MultipartFormDataTests.Unreadable.allCases)
    func unreadable(_ kind: MultipartFormDataTests.Unreadable) throws {
        let scratch = try Scratch()
        let path: String
        switch kind {
        case .missing: path = "\(scratch.directory)/nope.bin"
        case .directory: path = scratch.directory
        case .fifo:
            path = "\(scratch.directory)/fifo"
            try #require(mkfifo(path, 0o600) == 0)
        case .characterDevice: path = "/dev/zero"
        }
        let error = #expect(throws: HTTPError.self) { try HTTPRequestSerializer().request(.put, "http://h/", bodyFromFile: path) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.hasPrefix("upload file \(path) ") == true, "\(error?.message ?? "")")
    }

    /// The third attacker review: `/proc/self/status` measures 0 bytes, so its body went out empty with exit 0.
    @Test("A file that reports a size of 0 but has content (/proc) is unreadableFile, not an empty body")
    func kernelMadeFile() throws {
        let error = #expect(throws: HTTPError.self) {
            try HTTPRequestSerializer().request(.put, "http://h/", bodyFromFile: "/proc/self/status")
        }
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.contains("reports a size of 0 but has content") == true, "\(error?.message ?? "")")
    }

    @Test(
        "A file that changes size or disappears after the request was built fails the read, naming it",
        arguments: MultipartFormDataTests.Change.allCases)
    func changedBeforeSending(_ change: MultipartFormDataTests.Change) throws {
        let scratch = try Scratch()
        let path = try scratch.file("f.bin", MultipartFormDataTests.randomBytes(100_000))
        let request = try HTTPRequestSerializer().request(.put, "http://h/", bodyFromFile: path)
        switch change {
        case .shrinks: try #require(truncate(path, 50_000) == 0)
        case .grows: try #require(truncate(path, 100_001) == 0)
        case .disappears: try FileManager.default.removeItem(atPath: path)
        }
        let error = #expect(throws: HTTPError.self) { try MultipartFormDataTests.drain(request) }
        #expect(error?.code == .unreadableFile)
        #expect(error?.message.hasPrefix("upload file \(path) ") == true, "\(error?.message ?? "")")
    }
}
