import PinpathSecurity
import Testing

@Suite("HOST[:PORT] parsing")
struct TLSEndpointTests {
    @Test(
        "Names, IPv4, bracketed and bare IPv6, with and without a port",
        arguments: [
            ("valid.test", "valid.test", 443, "valid.test:443"),
            ("valid.test:8443", "valid.test", 8443, "valid.test:8443"),
            ("127.0.0.1:1", "127.0.0.1", 1, "127.0.0.1:1"),
            ("[::1]:65535", "::1", 65535, "[::1]:65535"),
            ("[::1]", "::1", 443, "[::1]:443"),
            ("::1", "::1", 443, "[::1]:443"),
            ("fe80::1:2", "fe80::1:2", 443, "[fe80::1:2]:443"),
        ])
    func parses(text: String, host: String, port: Int, description: String) throws {
        let endpoint = try TLSEndpoint(parsing: text)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.description == description)
    }

    @Test("The default port applies only when none is written")
    func defaultPort() throws {
        #expect(try TLSEndpoint(parsing: "127.0.0.1", defaultPort: 4433).port == 4433)
        #expect(try TLSEndpoint(parsing: "127.0.0.1:80", defaultPort: 4433).port == 80)
    }

    @Test(
        "Refused with a message naming the text",
        arguments: [
            ("", "has no host"), (":443", "has no host"), ("[]:443", "has no host"),
            ("a:0", "is not a number from 1 to 65535"), ("a:65536", "is not a number from 1 to 65535"),
            ("a:", "is not a number from 1 to 65535"), ("a:https", "is not a number from 1 to 65535"),
            ("[::1", "no closing"), ("[::1]443", "not :PORT"),
            ("https://valid.test/", "not a URL"), ("valid test", "not a URL"),
        ])
    func refuses(text: String, problem: String) {
        #expect {
            try TLSEndpoint(parsing: text)
        } throws: { error in
            let message = (error as? SecurityError)?.message ?? ""
            return message.contains("\"\(text)\"") && message.contains(problem)
        }
    }
}
