import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 11, rule 7: a reload compares endpoints by value, over everything a probe depends on. Every key of
/// a policy and of an endpoint, changed alone, makes the endpoint unequal; an unchanged file leaves it equal.
@Suite("Configurations compare by value")
struct ConfigurationEqualityTests {
    static let pki = TestPKI.shared

    static let basePolicy: KeyValuePairs<String, String> = [
        "mode": "public_key",
        "pins": "[\"\(pinA)\", \"\(pinB)\"]",
        "certificates": "[\(pki.path("root"))]",
        "ca_file": pki.path("store"),
        "hosts": "[\"api.example.com\"]",
        "include_subdomains": "false",
        "enforce": "true",
        "expires": "2030-01-01",
        "allow_invalid_certificates": "false",
        "validates_domain_name": "true",
        "require_backup_pin": "true",
        "profile": "webpki",
        "max_chain_depth": "4",
        "crl_files": "[\(RevocationPKI.shared.file("inter.crl"))]",
        "revocation": "none",
        "report_uri": "https://reports.example.net/pin",
    ]

    static let baseEndpoint: KeyValuePairs<String, String> = [
        "name": "api",
        "url": "https://api.example.com/health",
        "method": "GET",
        "headers": "{ X-Probe: one }",
        "expect": "{ status: [200], body_contains: ok, body_matches: \"o+k\" }",
        "interval": "60s",
        "timeout": "10s",
        "policy": "api",
        "ip_family": "any",
        "failure_threshold": "2",
        "success_threshold": "1",
        "cert_expiry_warning": "14d",
        "follow_redirects": "true",
        "proxy": "http://proxy.example.com:3128",
    ]

    /// One key changed to another valid value.
    static let policyChanges: [String: String] = [
        "mode": "certificate",
        "pins": "[\"\(pinA)\", \"\(pinC)\"]",
        "certificates": "[\(pki.path("inter"))]",
        "ca_file": pki.path("otherroot"),
        "hosts": "[\"api.example.com\", \"other.example.com\"]",
        "include_subdomains": "true",
        "enforce": "false",
        "expires": "2031-01-01",
        "allow_invalid_certificates": "true",
        "validates_domain_name": "false",
        "profile": "rfc5280",
        "max_chain_depth": "5",
        "crl_files": "[\(RevocationPKI.shared.file("all.crl"))]",
        "revocation": "stapled",
        // Where its pin failures are reported: the endpoint starts afresh, as for any change to its policies.
        "report_uri": "[https://reports.example.net/pin, https://backup.example.net/pin]",
    ]
    /// Checked at load only: with two pins it changes nothing a probe does, so it is not a change.
    static let loadTimeOnlyPolicyKeys: Set<String> = ["require_backup_pin"]

    static let endpointChanges: [String: String] = [
        "name": "api2",
        "url": "https://api.example.com/health?v=2",
        "method": "HEAD",
        "headers": "{ X-Probe: two }",
        "expect": "{ status: [200], body_contains: ok, body_matches: \"o*k\" }",
        "interval": "61s",
        "timeout": "9s",
        "policy": "other",
        "ip_family": "ipv4",
        "failure_threshold": "3",
        "success_threshold": "2",
        "cert_expiry_warning": "7d",
        "follow_redirects": "false",
        "proxy": "none",
    ]

    static func yaml(policy: [String: String] = [:], endpoint: [String: String] = [:], otherHosts: String = "[\"other.test\"]") -> String {
        let policyLines = basePolicy.map { "    \($0.key): \(policy[$0.key] ?? $0.value)" }
        let endpointLines = baseEndpoint.enumerated().map { index, pair in
            "\(index == 0 ? "  - " : "    ")\(pair.key): \(endpoint[pair.key] ?? pair.value)"
        }
        return
            (["policies:", "  api:"] + policyLines
            + ["  other: { mode: public_key, pins: [\"\(pinC)\"], require_backup_pin: false, hosts: \(otherHosts) }", "endpoints:"]
            + endpointLines).joined(separator: "\n") + "\n"
    }

    static func endpoint(_ yaml: String) throws -> EndpointConfiguration {
        try #require(try loadConfiguration(yaml).endpoints.first)
    }

    @Test("Every policy and endpoint key has a change below, or is load-time only")
    func everyKeyIsCovered() {
        #expect(Set(Self.policyChanges.keys).union(Self.loadTimeOnlyPolicyKeys) == Set(PolicyConfiguration.keys))
        #expect(Set(Self.basePolicy.map(\.key)) == Set(PolicyConfiguration.keys))
        #expect(Set(Self.endpointChanges.keys) == Set(EndpointConfiguration.keys))
        #expect(Set(Self.baseEndpoint.map(\.key)) == Set(EndpointConfiguration.keys))
    }

    @Test("The same file twice: equal")
    func unchanged() throws {
        #expect(try Self.endpoint(Self.yaml()) == Self.endpoint(Self.yaml()))
    }

    @Test("A change to one key of the endpoint's policy makes it unequal", arguments: policyChanges.keys.sorted())
    func policyKey(_ key: String) throws {
        #expect(try Self.endpoint(Self.yaml()) != Self.endpoint(Self.yaml(policy: [key: Self.policyChanges[key]!])))
    }

    @Test("A change to one key of the endpoint makes it unequal", arguments: endpointChanges.keys.sorted())
    func endpointKey(_ key: String) throws {
        #expect(try Self.endpoint(Self.yaml()) != Self.endpoint(Self.yaml(endpoint: [key: Self.endpointChanges[key]!])))
    }

    @Test("A policy only a redirect can reach changes an endpoint that follows redirects, not one that does not")
    func redirectPolicies() throws {
        #expect(try Self.endpoint(Self.yaml()) != Self.endpoint(Self.yaml(otherHosts: "[\"elsewhere.test\"]")))
        let noRedirects = ["follow_redirects": "false"]
        #expect(
            try Self.endpoint(Self.yaml(endpoint: noRedirects))
                == Self.endpoint(Self.yaml(endpoint: noRedirects, otherHosts: "[\"elsewhere.test\"]")))
    }

    @Test("The same CA file path with other certificates in it is a change")
    func caFileContents() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("ca.pem")
        try FileManager.default.copyItem(atPath: Self.pki.path("store"), toPath: file)
        let before = try Self.endpoint(Self.yaml(policy: ["ca_file": file]))
        #expect(try Self.endpoint(Self.yaml(policy: ["ca_file": file])) == before)
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.copyItem(atPath: Self.pki.path("otherroot"), toPath: file)
        #expect(try Self.endpoint(Self.yaml(policy: ["ca_file": file])) != before)
    }
}
