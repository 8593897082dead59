import Testing

@testable import PinpathReachability

@Suite("Parsing targets")
struct TargetParsingTests {
    @Test(
        "IP literals and host names are accepted",
        arguments: [
            ("192.0.2.1", ReachabilityTarget.address(IPAddress("192.0.2.1")!)),
            ("2001:db8::1", .address(IPAddress("2001:db8::1")!)),
            ("[2001:db8::1]", .address(IPAddress("2001:db8::1")!)),
            ("example.com", .host("example.com")),
            ("example.com.", .host("example.com")),
            ("  api-1.internal  ", .host("api-1.internal")),
            ("_sip._tcp.example.com", .host("_sip._tcp.example.com")),
            ("localhost", .host("localhost")),
        ])
    func valid(text: String, expected: ReachabilityTarget) throws {
        #expect(try ReachabilityTarget(parsing: text) == expected)
    }

    @Test(
        "Anything else is an error that names the input and the problem",
        arguments: [
            ("", "empty"),
            ("https://example.com", "not a URL"),
            ("bad host", "contains"),
            ("a..b", "empty label"),
            ("-a.example", "starts or ends with '-'"),
            ("999.1.1.1", "not a valid one"),
            (String(repeating: "a", count: 64) + ".com", "longer than 63"),
            ("ex\u{e9}mple.com", "contains"),
        ])
    func invalid(text: String, problem: String) {
        #expect {
            try ReachabilityTarget(parsing: text)
        } throws: { error in
            let error = error as! ReachabilityError
            return error.code == .invalidTarget && error.message.contains("\"\(text)\"") && error.message.contains(problem)
        }
    }

    @Test("Addresses print in their conventional form")
    func addressText() {
        #expect(IPAddress("2001:0db8:0000::0001")?.description == "2001:db8::1")
        #expect(IPAddress("10.0.0.1")?.description == "10.0.0.1")
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress("::1")!.isLoopback && IPAddress("127.0.0.2")!.isLoopback && !IPAddress("10.0.0.1")!.isLoopback)
    }
}
