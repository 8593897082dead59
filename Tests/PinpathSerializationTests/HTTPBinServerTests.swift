import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

/// The httpbin server the Session's real-server tests use, checked with a plain socket (no libcurl).
@Suite("httpbin test server", .serialized)
struct HTTPBinServerTests {
    @Test(
        "httpbin starts, answers GET /get over HTTP/1.0 with JSON, and stops",
        .enabled(if: HTTPBinServer.isAvailable, Comment(rawValue: HTTPBinServer.unavailableReason)))
    func rawGet() throws {
        let server = try HTTPBinServer()
        defer { server.stop() }
        #expect(server.baseURL.absoluteString == "http://127.0.0.1:\(server.port)/")

        let fd = try TLSServer.connectLoopback(port: server.port)
        defer { close(fd) }
        let request = Array("GET /get?probe=1 HTTP/1.0\r\nHost: 127.0.0.1:\(server.port)\r\nX-Pinpath: yes\r\n\r\n".utf8)
        #expect(request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == request.count)
        // HTTP/1.0 without keep-alive: the server closes after the response.
        var raw: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case let n = buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }), n > 0 { raw += buffer[..<n] }

        let split = try #require(raw.firstRange(of: Array("\r\n\r\n".utf8)))
        let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusCode = try #require(Int(head[0].split(separator: " ")[1]))
        var headers = HeaderFields()
        for line in head.dropFirst() {
            let (name, value) = try #require(
                line.firstIndex(of: ":").map { (String(line[..<$0]), line[line.index(after: $0)...].trimmingCharacters(in: .whitespaces)) })
            headers.add(name: name, value: value)
        }
        let response = SessionResponse(
            url: server.baseURL.appendingPathComponent("get"), statusCode: statusCode, headers: headers,
            body: Array(raw[split.upperBound...]))
        let json = try #require(try JSONResponseDecoder().decode(response))
        guard case .object = json, let args = json["args"], case .object = args, let sent = json["headers"], case .object = sent else {
            Issue.record("unexpected JSON: \(json)")
            return
        }
        #expect(args["probe"] == "1")
        #expect(sent["X-Pinpath"] == "yes")
        #expect(json["url"] == .string("http://127.0.0.1:\(server.port)/get?probe=1"))

        server.stop()
        #expect(throws: (any Error).self) { try TLSServer.connectLoopback(port: server.port) }
    }
}
