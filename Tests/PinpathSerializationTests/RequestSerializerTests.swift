import FoundationEssentials
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

@Suite("Request serializers")
struct RequestSerializerTests {
    static func bodyText(_ request: SessionRequest) -> String? {
        guard case .bytes(let bytes) = request.body else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    struct Placement: Sendable, CustomTestStringConvertible {
        var method: RequestMethod
        var url: String
        var parameters: Parameters?
        var expectedURL: String
        var expectedBody: String?
        var testDescription: String { "\(method) \(url) \(parameters.map { "\($0.count) parameters" } ?? "nil")" }
    }

    @Test(
        "Form serializer: query for GET, HEAD and DELETE, form body otherwise",
        arguments: [
            Placement(method: .get, url: "http://h/p", parameters: ["b": "2", "a": "1"], expectedURL: "http://h/p?a=1&b=2"),
            Placement(method: .head, url: "http://h/p", parameters: ["a": "1"], expectedURL: "http://h/p?a=1"),
            Placement(method: .delete, url: "http://h/p", parameters: ["a": "1"], expectedURL: "http://h/p?a=1"),
            Placement(method: .get, url: "http://h/p?x=0", parameters: ["a": "1"], expectedURL: "http://h/p?x=0&a=1"),
            Placement(method: .get, url: "http://h/p?", parameters: ["a": "1"], expectedURL: "http://h/p?a=1"),
            Placement(method: .get, url: "http://h/p#frag", parameters: ["a": "1"], expectedURL: "http://h/p?a=1#frag"),
            Placement(method: .get, url: "http://h/p", parameters: [:], expectedURL: "http://h/p"),
            Placement(method: .get, url: "http://h/p?x=0", parameters: nil, expectedURL: "http://h/p?x=0"),
            Placement(
                method: .post, url: "http://h/p", parameters: ["b": "2", "a": "1 &"], expectedURL: "http://h/p",
                expectedBody: "a=1%20%26&b=2"),
            Placement(method: .put, url: "http://h/p?x=0", parameters: ["a": "1"], expectedURL: "http://h/p?x=0", expectedBody: "a=1"),
            Placement(
                method: .patch, url: "http://h/p", parameters: ["a": ["b": "c"]], expectedURL: "http://h/p", expectedBody: "a%5Bb%5D=c"),
            Placement(method: "options", url: "http://h/p", parameters: ["a": "1"], expectedURL: "http://h/p", expectedBody: "a=1"),
            Placement(method: .post, url: "http://h/p", parameters: nil, expectedURL: "http://h/p", expectedBody: ""),
        ])
    func formPlacement(_ row: Placement) throws {
        let request = try HTTPRequestSerializer().request(row.method, row.url, parameters: row.parameters)
        #expect(request.method == row.method)
        #expect(request.url.absoluteString == row.expectedURL)
        #expect(Self.bodyText(request) == row.expectedBody)
        if let body = row.expectedBody {
            #expect(request.headers["Content-Type"] == "application/x-www-form-urlencoded")
            #expect(request.headers["Content-Length"] == String(body.utf8.count))
        } else {
            #expect(request.headers["Content-Type"] == nil)
        }
    }

    @Test("AFNetworking's emoji vector through a GET request keeps every sequence whole")
    func emojiInURL() throws {
        let value = "!" + String(repeating: QueryStringTests.emoji, count: 5)
        let request = try HTTPRequestSerializer().request(.get, "http://test.com", parameters: ["test": .string(value)])
        #expect(request.url.query(percentEncoded: true) == "test=%21" + String(repeating: QueryStringTests.emojiEscaped, count: 5))
        #expect(request.url.query(percentEncoded: false) == "test=" + value)
    }

    @Test("A Content-Type the caller set is kept; headers are passed on")
    func callerContentType() throws {
        let headers: HeaderFields = ["Content-Type": "application/x-custom", "Authorization": "Bearer t"]
        let form = try HTTPRequestSerializer().request(.post, "http://h/p", parameters: ["a": "1"], headers: headers)
        #expect(form.headers["content-type"] == "application/x-custom")
        #expect(form.headers["Authorization"] == "Bearer t")
        let json = try JSONRequestSerializer().request(.post, "http://h/p", parameters: ["a": "1"], headers: headers)
        #expect(json.headers["content-type"] == "application/x-custom")
    }

    @Test("A raw body is sent as given with its content type, unless the caller chose one")
    func rawBody() throws {
        let serializer = HTTPRequestSerializer()
        let form = try serializer.request(.post, "http://h/p", body: Array("a=1&b".utf8))
        #expect(Self.bodyText(form) == "a=1&b")
        #expect(form.headers["Content-Type"] == "application/x-www-form-urlencoded")
        #expect(form.headers["Content-Length"] == "5")
        let text = try serializer.request(
            .put, "http://h/p", body: [0xFF], contentType: "application/octet-stream", headers: ["content-type": "image/png"])
        #expect(text.headers["Content-Type"] == "image/png")
        #expect(throws: HTTPError.self) { try serializer.request(.post, "http://h/p", body: [], contentType: "text/plain\nX: 1") }
    }

    @Test("The base URL is used for relative paths")
    func baseURL() throws {
        let request = try JSONRequestSerializer().request(
            .get, "get", relativeTo: URL(string: "http://127.0.0.1:8080/api"), parameters: ["a": 1])
        #expect(request.url.absoluteString == "http://127.0.0.1:8080/api/get?a=1")
    }

    @Test(
        "Header injection is refused before anything is built",
        arguments: [("X-A", "1\r\nX-Injected: 2"), ("Bad Name", "1"), ("X-Nul", "a\u{0}")])
    func headerInjection(name: String, value: String) {
        let headers: HeaderFields = [name: value]
        for serializer in [HTTPRequestSerializer(), JSONRequestSerializer()] as [any RequestSerializer] {
            let error = #expect(throws: HTTPError.self) {
                try serializer.request(.post, "http://h/", parameters: ["a": 1], headers: headers)
            }
            #expect(error?.code == .invalidHeader)
        }
    }

    @Test(
        "JSON serializer: AFNetworking's vector, sorted keys, no body without parameters",
        arguments: [
            (["key": "value"] as Parameters?, #"{"key":"value"}"#),
            (["b": [1, 2.5, true, nil], "a": ["x": "/"]], #"{"a":{"x":"/"},"b":[1,2.5,true,null]}"#),
            ([:], "{}"),
            (nil, nil),
        ] as [(Parameters?, String?)])
    func jsonBody(parameters: Parameters?, expected: String?) throws {
        let request = try JSONRequestSerializer().request(.post, "http://h/p", parameters: parameters)
        #expect(Self.bodyText(request) == expected)
        #expect(request.headers["Content-Type"] == expected.map { _ in "application/json" })
        #expect(request.headers["Content-Length"] == expected.map { String($0.utf8.count) })
    }

    @Test("JSON serializer: GET, HEAD and DELETE parameters go into the query", arguments: [RequestMethod.get, .head, .delete])
    func jsonQuery(method: RequestMethod) throws {
        let request = try JSONRequestSerializer().request(method, "http://h/p", parameters: ["a": "1"])
        #expect(request.url.absoluteString == "http://h/p?a=1")
        #expect(request.body == nil)
    }

    struct Payload: Encodable {
        var name: String
        var ratio: Double
    }

    @Test("JSON serializer: any Encodable")
    func encodable() throws {
        let request = try JSONRequestSerializer().request(.put, "http://h/p", json: Payload(name: "n", ratio: 0.5))
        #expect(Self.bodyText(request) == #"{"name":"n","ratio":0.5}"#)
    }

    @Test(
        "JSON serializer: NaN and infinities are invalidBody with where they are, not a crash",
        arguments: [["x": .double(.nan)], ["a": [1, .double(.infinity)]], ["a": ["b": .double(-.infinity)]]] as [Parameters])
    func nonFinite(parameters: Parameters) {
        let error = #expect(throws: HTTPError.self) { try JSONRequestSerializer().request(.post, "http://h/p", parameters: parameters) }
        #expect(error?.code == .invalidBody)
        #expect(error?.message.contains("POST http://h/p") == true)
        #expect(error?.message.contains("(at .") == true)
    }

    @Test("JSON serializer: an Encodable that throws is invalidBody")
    func throwingEncodable() {
        struct Refuses: Encodable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "refused"))
            }
        }
        let error = #expect(throws: HTTPError.self) { try JSONRequestSerializer().request(.post, "http://h/p", json: Refuses()) }
        #expect(error?.code == .invalidBody)
        #expect(error?.message.contains("refused") == true)
    }

    @Test(
        "JSON text: valid text is sent as given, whatever the method",
        arguments: [#"{"a": [1, 2.5e3, -0, true, null, "\u00e9\ud83d\ude00"]}"#, " 42 ", #""x""#, "[]", "\n{\r\n\t}\n"])
    func jsonTextAccepted(text: String) throws {
        let request = try JSONRequestSerializer().request(.get, "http://h/p", jsonText: text)
        #expect(Self.bodyText(request) == text)
        #expect(request.headers["Content-Type"] == "application/json")
    }

    @Test(
        "JSON text: invalid text is invalidBody with the line and column",
        arguments: [
            ("{\"a\": tru}", "line 1, column 7"), ("[1,2", "line 1, column 5"), ("[1,]", "line 1, column 4"),
            ("{\"a\":1,}", "line 1, column 8"), ("{\n  \"a\": 1\n  \"b\": 2}", "line 3, column 3"), ("", "line 1, column 1"),
            ("01", "line 1, column 1"), ("{a:1}", "line 1, column 2"), ("[1] x", "line 1, column 5"), ("NaN", "line 1, column 1"),
            ("\"a\tb\"", "line 1, column 3"), ("\"\\ud800\"", "line 1, column 2"), ("\"\\x\"", "line 1, column 3"),
            ("1e400", "line 1, column 1"),
            ("[1.]", "line 1, column 4"), ("-", "line 1, column 2"), ("\"abc", "line 1, column 1"),
            (String(repeating: "[", count: 513), "nested deeper than 512"),
        ])
    func jsonTextRejected(text: String, position: String) {
        let error = #expect(throws: HTTPError.self) { try JSONRequestSerializer().request(.post, "http://h/p", jsonText: text) }
        #expect(error?.code == .invalidBody)
        #expect(error?.message.contains(position) == true, "\(error?.message ?? "")")
    }

    @Test("JSON text: hostile nesting is refused without exhausting the stack")
    func deepNesting() throws {
        let text = String(repeating: "[", count: 1_000_000)
        #expect(throws: HTTPError.self) { try JSONRequestSerializer().request(.post, "http://h/p", jsonText: text) }
        let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        _ = try JSONRequestSerializer().request(.post, "http://h/p", jsonText: deepest)
    }

    @Test("A JSON text with invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse([0xEF, 0xBB, 0xBF, 0x31]) }
    }
}
