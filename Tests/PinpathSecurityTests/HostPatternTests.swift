import PinpathTestSupport
import Testing

@testable import PinpathSecurity

@Suite("Host patterns")
struct HostPatternTests {
    @Test(
        "Matching is OkHttp's: * is one label, ** any depth including the domain, label-aligned",
        arguments: [
            ("example.com", "example.com", true),
            ("example.com", "EXAMPLE.com.", true),
            ("example.com", "www.example.com", false),
            ("example.com.", "example.com", true),
            ("*.example.com", "www.example.com", true),
            ("*.example.com", "WWW.Example.COM", true),
            ("*.example.com", "example.com", false),
            ("*.example.com", "a.b.example.com", false),
            ("*.example.com", "wwwexample.com", false),
            ("**.example.com", "example.com", true),
            ("**.example.com", "www.example.com", true),
            ("**.example.com", "a.b.example.com", true),
            ("**.example.com", "anotherexample.com", false),
            ("**.example.co.uk", "example.co.uk", true),
            ("**.example.co.uk", "www.example.co.uk", true),
            ("**.example.co.uk", "co.uk", false),
            ("**.example.co.uk", "anotherexample.co.uk", false),
            ("**.example.co.uk", "example.co.uk.evil.com", false),
            ("*.example.co.uk", "co.uk", false),
        ])
    func matching(pattern: String, host: String, matches: Bool) throws {
        #expect(try HostPattern(parsing: pattern).matches(host) == matches)
    }

    @Test(
        "IPv6 addresses are exact patterns, as the request command pins a URL's host", arguments: ["::1", "fe80::1%eth0", "2001:db8::10"])
    func ipv6(address: String) throws {
        #expect(try HostPattern(parsing: address).matches(address.uppercased()))
    }

    @Test("include_subdomains widens exact and one-label patterns")
    func includeSubdomains() throws {
        let exact = try HostPattern(parsing: "example.com")
        #expect(exact.matches("a.b.example.com", includeSubdomains: true))
        #expect(!exact.matches("anotherexample.com", includeSubdomains: true))
        let one = try HostPattern(parsing: "*.example.com")
        #expect(one.matches("a.b.example.com", includeSubdomains: true))
        #expect(!one.matches("example.com", includeSubdomains: true))
    }

    @Test(
        "Malformed patterns are refused, naming them",
        arguments: [
            ("", "no domain"), ("*.", "wildcard"), ("w*.example.com", "wildcard"), ("*.*.example.com", "wildcard"),
            ("example..com", "empty label"), ("***.example.com", "wildcard"),
            // Found while fuzzing: these were accepted, and the policy silently applied to no host.
            ("https://api.example.com", "has \":\", which no host name has"), ("api.example.com:8443", "has \":\""),
            ("api.example.com/health", "has \"/\""), ("user@example.com", "has \"@\""), ("exa mple.com", "has U+20"),
            ("*.[::1]", "has \"[\""), ("**.::1", "has \":\""), ("example.com\u{0}", "has U+0"),
            // Found by FuzzPins: an IPv6 address's zone was not checked, and a NUL ended the address.
            ("::%\u{FFFD}\\sha256=\"", "has \":\""), ("fe80::1%", "has \":\""), ("::1%eth0/x", "has \":\""),
            ("::\u{0}junk", "has \":\""),
        ])
    func malformed(pattern: String, problem: String) {
        #expect {
            try HostPattern(parsing: pattern)
        } throws: { error in
            let error = error as? SecurityError
            return error?.code == .invalidHostPattern && error?.message.contains("\"\(pattern)\"") == true
                && error?.message.contains(problem) == true
        }
    }

    @Test("A host set unites the pins of every matching pattern; one enforcing entry makes the union enforcing")
    func unitedPins() throws {
        let pki = TestPKI.shared
        let (a, b, c) = (try pki.certificate("valid").spkiPin, try pki.certificate("inter").spkiPin, try pki.certificate("root").spkiPin)
        let set = HostPolicySet([
            HostPolicy(
                patterns: [try HostPattern(parsing: "**.example.com")],
                policy: try SecurityPolicy(mode: .publicKey, pins: [a, b], enforce: false)),
            HostPolicy(
                patterns: [try HostPattern(parsing: "api.example.com")],
                policy: try SecurityPolicy(mode: .publicKey, pins: [b, c])),
            HostPolicy(
                patterns: [try HostPattern(parsing: "other.com")], includeSubdomains: true,
                policy: try SecurityPolicy(mode: .publicKey, pins: [c], requiresBackupPin: false)),
        ])
        let api = try #require(set.resolution(for: "api.example.com")?.policy)
        #expect(api.pins == [a, b, c])
        #expect(api.enforce)  // report-only matching first does not make api.example.com's pins report-only
        #expect(api.notedHostname == "**.example.com" && api.includeSubdomains)
        let www = try #require(set.resolution(for: "www.example.com")?.policy)
        #expect(www.pins == [a, b])
        let sub = try #require(set.resolution(for: "x.other.com")?.policy)
        #expect(sub.pins == [c] && sub.notedHostname == "other.com" && sub.includeSubdomains)
        #expect(try set.resolution(for: "example.org") == nil)
    }
}

/// A pinned address spelled another way is the same host (issue 11, rule 5: a redirect to `[0::1]` must be held
/// to the policy for `::1`).
@Suite("Host patterns: one spelling per address")
struct HostPatternAddressSpellingTests {
    @Test(
        "An address pattern matches every spelling of its address, and nothing else",
        arguments: [
            ("::1", "0::1", true), ("::1", "0:0:0:0:0:0:0:1", true), ("::1", "[::0:1]", true), ("::1", "::2", false),
            ("127.0.0.1", "::ffff:127.0.0.1", true), ("127.0.0.1", "127.1", true), ("127.0.0.1", "0x7f.0.0.1", true),
            ("127.0.0.1", "2130706433", true), ("127.0.0.1", "127.0.0.2", false), ("2001:db8::1", "2001:DB8:0::1", true),
            ("::ffff:10.0.0.1", "10.0.0.1", true), ("1e100.net", "1e100.net", true),
        ])
    func spellings(_ pattern: String, _ host: String, _ matches: Bool) throws {
        #expect(try HostPattern(parsing: pattern).matches(host) == matches)
    }
}
