import Testing

@testable import PinpathHTTP

@Suite("Header fields")
struct HeaderFieldsTests {
    @Test("Look-up ignores case and setting replaces every field of the name")
    func caseInsensitive() {
        var headers: HeaderFields = ["Content-Type": "text/plain", "X-A": "1"]
        headers.add(name: "x-a", value: "2")
        #expect(headers["content-type"] == "text/plain")
        #expect(headers.values(for: "X-A") == ["1", "2"])
        headers["X-A"] = "3"
        #expect(headers.values(for: "x-a") == ["3"])
    }

    @Test("A response's fields kept as bytes read as the same fields, and change like them")
    func received() {
        var headers = HeaderFields()
        // As libcurl hands them over: line ends, spaces around the value, a line without a colon (no field).
        let lines = [
            "Server: nginx\r\n", "Set-Cookie:a=1\r\n", "Location: \t http://x/?a=b:c \r\n", "not a field\r\n", "set-cookie:\r\n", "X-E:",
        ]
        for line in lines {
            Array(line.utf8).withUnsafeBytes { headers.addReceived(line: $0) }
        }
        let given: HeaderFields = ["Server": "nginx", "Set-Cookie": "a=1", "Location": "http://x/?a=b:c", "set-cookie": "", "X-E": ""]
        #expect(headers == given)
        #expect(headers["location"] == "http://x/?a=b:c")
        #expect(headers["x-e"] == "")
        #expect(headers["Missing"] == nil)
        #expect(headers.values(for: "SET-COOKIE") == ["a=1", ""])
        #expect(headers.fields.map(\.name) == ["Server", "Set-Cookie", "Location", "set-cookie", "X-E"])
        headers.add(name: "X-Added", value: "1")
        headers["Server"] = nil
        #expect(headers.fields.map(\.name) == ["Set-Cookie", "Location", "set-cookie", "X-E", "X-Added"])
    }

    @Test(
        "Header injection and bad names are refused, naming the field",
        arguments: [("X-Bad", "a\r\nInjected: 1"), ("X-Bad", "a\nb"), ("Bad Name", "v"), ("", "v"), ("X-Nul", "a\u{0}b")])
    func refused(name: String, value: String) {
        let headers: HeaderFields = [name: value]
        #expect(throws: HTTPError.self) { try headers.validate() }
    }

    @Test("Ordinary fields pass")
    func accepted() throws {
        let headers: HeaderFields = ["Authorization": "Bearer abc.def", "X-Token_1": "a b\tc"]
        try headers.validate()
    }

    @Test("A bad name is quoted escaped: the message reaches terminals and events")
    func badNameEscaped() {
        let headers: HeaderFields = ["X-\u{1B}[2K\u{202E}": "v"]
        let error = #expect(throws: HTTPError.self) { try headers.validate() }
        #expect(error?.message.contains(#""X-\x1b[2K\u{202e}""#) == true, "\(error?.message ?? "")")
    }

    @Test(
        "Credentials by name: the exact names, and any name containing a credential's word, in any case",
        arguments: [
            "Authorization", "proxy-authorization", "Cookie", "Set-Cookie", "X-API-Key", "X-Auth-Token", "X-Access-Token",
            "X-Session-Id", "X-Upstream-Token", "Private-Key", "X-Client-Secret", "X-Password", "X-Passwd", "X-Credentials",
            "SESSION", "x-amz-security-token",
        ])
    func credential(name: String) {
        #expect(HeaderFields.isCredential(name))
    }

    @Test(
        "Fields that describe the client or the body are not credentials",
        arguments: ["Accept", "User-Agent", "Content-Type", "Content-Length", "X-Request-Id", "X-Trace", "Host", "Accept-Language"])
    func notCredential(name: String) {
        #expect(!HeaderFields.isCredential(name))
    }
}
