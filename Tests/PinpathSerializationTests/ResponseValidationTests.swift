import FoundationEssentials
import PinpathSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

@Suite("Response validation and JSON decoding")
struct ResponseValidationTests {
    static func response(_ status: Int, _ contentType: String?, _ body: String) -> SessionResponse {
        var headers = HeaderFields()
        if let contentType { headers["Content-Type"] = contentType }
        return SessionResponse(url: URL(string: "http://h/x")!, statusCode: status, headers: headers, body: Array(body.utf8))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var status: Int
        var contentType: String?
        var body: String
        var expected: HTTPError.Code?
        var testDescription: String { "\(status) \(contentType ?? "no type") \(body.count) bytes → \(expected?.description ?? "ok")" }
    }

    @Test(
        "JSON content types and 200-299; a type mismatch is an error only with a body",
        arguments: [
            Row(status: 200, contentType: "application/json", body: "{}", expected: nil),
            Row(status: 200, contentType: "Application/JSON; charset=utf-8", body: "{}", expected: nil),
            Row(status: 201, contentType: "text/json", body: "[]", expected: nil),
            Row(status: 299, contentType: "text/javascript", body: "1", expected: nil),
            Row(status: 200, contentType: "text/html", body: "<html>", expected: .unexpectedContentType),
            Row(status: 200, contentType: nil, body: "{}", expected: .unexpectedContentType),
            Row(status: 205, contentType: "text/html", body: "", expected: nil),
            Row(status: 204, contentType: nil, body: "", expected: nil),
            Row(status: 200, contentType: "text/plain", body: "", expected: nil),
            Row(status: 199, contentType: "application/json", body: "{}", expected: .unexpectedStatus),
            Row(status: 300, contentType: "application/json", body: "{}", expected: .unexpectedStatus),
            Row(status: 404, contentType: "application/json", body: "{}", expected: .unexpectedStatus),
            Row(status: 500, contentType: "text/html", body: "<html>", expected: .unexpectedStatus),
            Row(status: 500, contentType: nil, body: "", expected: .unexpectedStatus),
        ])
    func jsonValidation(_ row: Row) {
        let response = Self.response(row.status, row.contentType, row.body)
        do {
            _ = try JSONResponseDecoder().decode(response)
            #expect(row.expected == nil)
        } catch {
            #expect(error.code == row.expected)
            #expect(error.response?.statusCode == row.status)
            #expect(error.response?.body == Array(row.body.utf8))
            #expect(error.message.contains("http://h/x"))
        }
    }

    @Test(
        "Custom status codes and content types",
        arguments: [
            (200, "text/plain", true), (304, "text/plain", true), (404, "text/plain", true), (405, "text/plain", false),
            (200, "TEXT/CSV", true), (200, "application/json", false), (302, "text/csv", false),
        ])
    func customValidator(status: Int, contentType: String, passes: Bool) {
        let validator = ResponseValidator(
            acceptableStatusCodes: RangeSet([200..<300, 304..<305, 404..<405]), acceptableContentTypes: ["text/plain", "Text/CSV"])
        let passed = (try? validator.validate(Self.response(status, contentType, "x"))) != nil
        #expect(passed == passes)
    }

    @Test("The default validator accepts any content type and names the accepted codes")
    func defaultValidator() throws {
        try ResponseValidator().validate(Self.response(200, "image/png", "x"))
        let error = #expect(throws: HTTPError.self) { try ResponseValidator().validate(Self.response(503, nil, "")) }
        #expect(error?.message.contains("status 503") == true)
        #expect(error?.message.contains("200-299") == true)
    }

    @Test("Empty and whitespace-only bodies give no value and no error", arguments: ["", " ", "\r\n\t  \n"])
    func emptyBody(body: String) throws {
        #expect(try JSONResponseDecoder().decode(Self.response(200, "application/json", body)) == nil)
        #expect(try JSONResponseDecoder().decode([String: Int].self, from: Self.response(200, "application/json", body)) == nil)
    }

    @Test(
        "Invalid JSON is invalidResponse with the position, carrying the response",
        arguments: ["{\"a\":", "<html>", "[1,]", "{\"a\":1} {}"])
    func invalidJSON(body: String) {
        let response = Self.response(200, "application/json", body)
        let error = #expect(throws: HTTPError.self) { try JSONResponseDecoder().decode(response) }
        #expect(error?.code == .invalidResponse)
        #expect(error?.response?.body == Array(body.utf8))
        #expect(error?.message.contains("line 1, column") == true)
    }

    static let withNulls = #"{"a": null, "b": {"c": null, "d": [null, {"e": null, "f": 1}]}, "g": [1.5, "x", true]}"#

    @Test("Values decode as they are, nulls included")
    func decodesValue() throws {
        let value = try JSONResponseDecoder().decode(Self.response(200, "application/json", Self.withNulls))
        #expect(value == ["a": nil, "b": ["c": nil, "d": [nil, ["e": nil, "f": 1]]], "g": [1.5, "x", true]])
    }

    @Test("removesKeysWithNullValues removes null entries at every depth; array elements stay")
    func removesNulls() throws {
        let decoder = JSONResponseDecoder(removesKeysWithNullValues: true)
        let value = try decoder.decode(Self.response(200, "application/json", Self.withNulls))
        #expect(value == ["b": ["d": [nil, ["f": 1]]], "g": [1.5, "x", true]])
    }

    struct Shape: Decodable, Equatable {
        var b: Inner
        var g: [JSONValue]
        struct Inner: Decodable, Equatable {
            var c: Int?
            var d: [JSONValue]
        }
    }

    @Test("Decodable types decode, with and without null removal")
    func decodable() throws {
        for removes in [false, true] {
            let decoder = JSONResponseDecoder(removesKeysWithNullValues: removes)
            let shape = try #require(try decoder.decode(Shape.self, from: Self.response(200, "text/json", Self.withNulls)))
            #expect(shape.b.c == nil)
            #expect(shape.g == [1.5, "x", true])
            #expect(shape.b.d.last == (removes ? ["f": 1] : ["e": nil, "f": 1]))
        }
    }

    @Test("JSON of the wrong shape is invalidResponse")
    func wrongShape() {
        let error = #expect(throws: HTTPError.self) {
            try JSONResponseDecoder().decode([Int].self, from: Self.response(200, "application/json", #"{"a":1}"#))
        }
        #expect(error?.code == .invalidResponse)
        #expect(error?.response != nil)
    }

    @Test("Numbers keep integer and floating-point apart; big integers become doubles")
    func numbers() throws {
        let value = try JSONResponseDecoder().decode(Self.response(200, "application/json", "[1, -0, 1.0, 2e3, 99999999999999999999]"))
        #expect(value == [1, 0, 1.0, 2000.0, 1e20])
        guard case .array(let elements)? = value else {
            Issue.record("not an array")
            return
        }
        #expect(elements.map { if case .int = $0 { true } else { false } } == [true, true, false, false, false])
    }
}
