import FoundationEssentials
import PinpathSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

@Suite("Request URLs and the base URL")
struct RequestURLTests {
    @Test(
        "Relative URLs resolve under the base URL with AFNetworking's trailing-slash rule",
        arguments: [
            ("get", "http://h/api", "http://h/api/get"),
            ("get", "http://h/api/", "http://h/api/get"),
            ("get?x=1", "http://h/api/v1", "http://h/api/v1/get?x=1"),
            ("/get", "http://h/api", "http://h/get"),
            ("../get", "http://h/api/v1", "http://h/api/get"),
            ("get", "http://h", "http://h/get"),
            ("get", "http://h:8080", "http://h:8080/get"),
            ("", "http://h/api", "http://h/api/"),
            ("?a=1", "http://h/api", "http://h/api/?a=1"),
            ("https://other.example/x", "http://h/api", "https://other.example/x"),
            ("//other.example/x", "https://h/api", "https://other.example/x"),
        ])
    func resolves(relative: String, base: String, expected: String) throws {
        let url = try RequestURL.resolve(relative, relativeTo: URL(string: base)!)
        #expect(url.absoluteString == expected)
    }

    @Test("Absolute URLs stand alone", arguments: ["http://127.0.0.1:8080/x?y=1", "https://[::1]/", "HTTPS://Example.COM/a%20b"])
    func absolute(url: String) throws {
        #expect(try RequestURL.resolve(url).absoluteString == url)
    }

    @Test(
        "Malformed or unusable URLs are invalidURL, naming the input",
        arguments: [
            ("", nil), ("get", nil), ("/get", nil), ("ftp://h/x", nil), ("mailto:a@b", nil), ("http://", nil), ("http:///x", nil),
            ("http://h/a b", nil), ("http://h/a\r\nX-Injected: 1", nil), ("http://exa mple.com/", nil), ("http://[::1/", nil),
            ("http://h:99999/", nil), ("http://h/é", nil), ("get", "h/api"), ("get", "file:///tmp/"), ("a b", "http://h/"),
        ] as [(String, String?)])
    func invalid(url: String, base: String?) {
        let error = #expect(throws: HTTPError.self) { try RequestURL.resolve(url, relativeTo: base.map { URL(string: $0)! }) }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("\"\(UntrustedText.escaped(url))\"") == true)
    }
}
