import Foundation
import PinpathSupport
import PinpathTestSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

/// The Session, its serializers and its response handling against a real httpbin on loopback: what was
/// sent is what httpbin echoes back.
@Suite(
    "Session against httpbin", .serialized,
    .enabled(if: HTTPBinServer.isAvailable, Comment(rawValue: HTTPBinServer.unavailableReason)))
final class HTTPBinTests {
    let server: HTTPBinServer
    let session: SessionManager

    init() throws {
        server = try HTTPBinServer()
        session = SessionManager(session: try Session(), baseURL: server.baseURL)
    }

    deinit { server.stop() }

    /// The echoed JSON object of a response.
    func echo(_ response: SessionResponse) throws -> JSONValue {
        guard let object = try JSONResponseDecoder().decode(response), case .object = object else {
            throw ShellError(description: "not a JSON object: \(String(decoding: response.body, as: UTF8.self))")
        }
        return object
    }

    struct Vector: Sendable, CustomTestStringConvertible {
        var parameters: Parameters
        /// What httpbin's `args` (or `form`) must hold: the parameters, flattened as their names were sent.
        var echoed: [String: JSONValue]
        var testDescription: String { "\(parameters)" }
    }

    static let vectors: [Vector] = [
        Vector(parameters: ["key": " :#[]@!$&'()*+,;=/?"], echoed: ["key": " :#[]@!$&'()*+,;=/?"]),
        Vector(
            parameters: ["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"], echoed: ["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"]
        ),
        Vector(parameters: ["key": "value", "key1": "value&"], echoed: ["key": "value", "key1": "value&"]),
        Vector(
            parameters: ["key": .string(String(repeating: "!", count: 5) + String(repeating: "👴🏿👷🏻👮🏽", count: 5))],
            echoed: ["key": .string(String(repeating: "!", count: 5) + String(repeating: "👴🏿👷🏻👮🏽", count: 5))]),
        Vector(parameters: ["a": ["b": "c", "d": ["e": "f"]]], echoed: ["a[b]": "c", "a[d][e]": "f"]),
        Vector(parameters: ["a": ["x", "y"]], echoed: ["a[]": ["x", "y"]]),
    ]

    @Test("GET puts parameters in the query string: httpbin's args equal what was meant", arguments: vectors)
    func queryVectors(_ vector: Vector) async throws {
        let response = try await session.get("get", parameters: vector.parameters)
        #expect(try echo(response)["args"] == .object(vector.echoed))
    }

    @Test("POST, PUT and PATCH put parameters in a form body", arguments: [RequestMethod.post, .put, .patch])
    func formBodies(_ method: RequestMethod) async throws {
        let response = try await session.request(method, method.rawValue.lowercased(), parameters: Self.vectors[4].parameters)
        let object = try echo(response)
        #expect(object["form"] == .object(Self.vectors[4].echoed))
        guard let headers = object["headers"], case .object = headers else {
            Issue.record("no headers")
            return
        }
        #expect(headers["Content-Type"] == "application/x-www-form-urlencoded")
    }

    @Test("A body keeps its method: a GET or DELETE with a body is not sent as POST")
    func bodyKeepsMethod() async throws {
        for method in [RequestMethod.get, .delete] {
            let request = try HTTPRequestSerializer().request(
                method, server.baseURL.appendingPathComponent("anything").absoluteString, body: Array("a=1".utf8))
            let echoed = try echo(try await session.session.send(request))
            #expect(echoed["method"] == .string(method.rawValue))
            #expect(echoed["form"] == ["a": "1"])
        }
    }

    @Test("DELETE and HEAD keep parameters in the URL")
    func urlMethods() async throws {
        let deleted = try await session.delete("delete", parameters: ["id": 7])
        #expect(try echo(deleted)["args"] == ["id": "7"])
        let head = try await session.head("get", parameters: ["x": "1"])
        #expect(head.statusCode == 200 && head.body.isEmpty)
    }

    @Test("The JSON serializer's body is echoed as JSON")
    func jsonBody() async throws {
        let json = SessionManager(session: session.session, baseURL: server.baseURL, requestSerializer: JSONRequestSerializer())
        let sent: Parameters = ["name": "pinpath", "nested": ["list": [1, 2.5, true, nil]]]
        let response = try await json.post("post", parameters: sent)
        #expect(try echo(response)["json"] == .object(sent))
    }

    @Test("A multipart upload streams a file and comes back in files and form")
    func multipart() async throws {
        let scratch = try TemporaryDirectory("upload")
        let file = scratch.file("upload.txt")
        let contents = String(repeating: "pinpath multipart line\n", count: 5000)  // 115 KB: several reads
        try contents.write(toFile: file, atomically: true, encoding: .utf8)
        var form = MultipartFormData()
        form.append(name: "field", value: "value")
        try form.appendFile(name: "upload", path: file)
        let response = try await session.upload("post", parameters: ["extra": "1"], form: form)
        let object = try echo(response)
        #expect(object["form"] == ["field": "value", "extra": "1"])
        #expect(object["files"] == ["upload": .string(contents)])
    }

    @Test("Status codes: send returns them, the validator refuses them with the response attached")
    func statusCodes() async throws {
        let raw = try await session.session.send(SessionRequest(method: .get, url: server.baseURL.appendingPathComponent("status/418")))
        #expect(raw.statusCode == 418)
        await #expect {
            _ = try await session.get("status/503")
        } throws: { error in
            let error = error as? HTTPError
            return error?.code == .unexpectedStatus && error?.response?.statusCode == 503
        }
    }

    @Test("Redirects are followed and counted, can be turned off, and are bounded")
    func redirects() async throws {
        let followed = try await session.get("redirect/3")
        #expect(followed.redirectCount == 3 && followed.url.path == "/get")
        var options = RequestOptions()
        options.followRedirects = false
        let stopped = try await session.session.send(
            SessionRequest(method: .get, url: server.baseURL.appendingPathComponent("redirect/1")), options: options)
        #expect(stopped.statusCode == 302)
        options.followRedirects = true
        options.maximumRedirects = 2
        await #expect { _ = try await session.get("redirect/3", options: options) } throws: {
            ($0 as? HTTPError)?.code == .tooManyRedirects
        }
    }

    @Test("A slow response ends at the timeout")
    func delay() async throws {
        var options = RequestOptions()
        options.timeout = .milliseconds(500)
        let started = ContinuousClock.now
        await #expect { _ = try await session.get("delay/3", options: options) } throws: { ($0 as? HTTPError)?.code == .timedOut }
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("gzip responses are decompressed; the default headers are sent")
    func gzipAndHeaders() async throws {
        let gzip = try echo(try await session.get("gzip"))
        #expect(gzip["gzipped"] == true)
        guard let headers = try echo(try await session.get("headers"))["headers"], case .object = headers,
            case .string(let agent)? = headers["User-Agent"]
        else {
            Issue.record("no User-Agent echoed")
            return
        }
        #expect(agent.hasPrefix("pinpath/\(PinpathVersion.current) (Linux "))
        #expect(headers["Accept-Language"] != nil)
    }

    @Test("A base URL with a path gets a trailing slash: relative paths resolve under it")
    func baseURL() async throws {
        let based = SessionManager(session: session.session, baseURL: server.baseURL.appendingPathComponent("anything/v1"))
        let response = try await based.get("users", parameters: ["page": 2])
        #expect(try echo(response)["url"] == .string("\(server.baseURL.absoluteString)anything/v1/users?page=2"))
    }

    @Test("Many requests at once share the engine and all complete")
    func concurrent() async throws {
        let session = self.session
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<50 { group.addTask { try await session.get("get", parameters: ["i": .int(index)]).statusCode } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 50 && statuses.allSatisfy { $0 == 200 })
    }
}
