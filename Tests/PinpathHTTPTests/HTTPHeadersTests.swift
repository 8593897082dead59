import Testing

@testable import PinpathHTTP

@Suite("Header fields")
struct HTTPHeadersTests {
    @Test("Look-up ignores case and setting replaces every field of the name")
    func caseInsensitive() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain", "X-A": "1"]
        headers.add(name: "x-a", value: "2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers.values(for: "X-A") == ["1", "2"])
        headers["X-A"] = "3"
        #expect(headers.values(for: "x-a") == ["3"])
    }

    @Test(
        "Header injection and bad names are refused, naming the field",
        arguments: [("X-Bad", "a\r\nInjected: 1"), ("X-Bad", "a\nb"), ("Bad Name", "v"), ("", "v"), ("X-Nul", "a\u{0}b")])
    func refused(name: String, value: String) {
        let headers: HTTPHeaders = [name: value]
        #expect(throws: HTTPError.self) { try headers.validate() }
    }

    @Test("Ordinary fields pass")
    func accepted() throws {
        let headers: HTTPHeaders = ["Authorization": "Bearer abc.def", "X-Token_1": "a b\tc"]
        try headers.validate()
    }
}
