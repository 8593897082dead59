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
        "revocation": "ocsp",
        "soft_fail": "false",
        "report_uri": "https://reports.example.net/pin",
    ]

    static let clients = ClientCertificatePKI.shared

    static let baseEndpoint: KeyValuePairs<String, String> = [
        "name": "api",
        "body": "ping",
        "client_certificate": clients.path("client"),
        "client_key": clients.path("client", "key"),
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
        "soft_fail": "true",
        // Where its pin failures are reported: the endpoint starts afresh, as for any change to its policies.
        "report_uri": "[https://reports.example.net/pin, https://backup.example.net/pin]",
    ]
    /// Checked at load only: with two pins it changes nothing a probe does, so it is not a change.
    static let loadTimeOnlyPolicyKeys: Set<String> = ["require_backup_pin"]

    static let endpointChanges: [String: String] = [
        "name": "api2",
        "body": "pong",
        "client_key": clients.path("client-copy", "key"),
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

    /// Keys that cannot be in the https base endpoint (another kind's, or one excluding another there), or
    /// cannot change alone and stay valid: each with an endpoint of its own, before and after the change.
    static let otherEndpointChanges: [String: (before: String, after: String)] = [
        "servername": (
            #"{ name: db, url: "tls://db.example:5432", servername: a.example }"#,
            #"{ name: db, url: "tls://db.example:5432", servername: b.example }"#
        ),
        // Not with the base endpoint's proxy, which could not honour it.
        "address": (
            #"{ name: api, url: "https://api.example.com/", address: 192.0.2.1 }"#,
            #"{ name: api, url: "https://api.example.com/", address: 192.0.2.2 }"#
        ),
        "send": (#"{ name: c, url: "tcp://c.example:6379", send: PING }"#, #"{ name: c, url: "tcp://c.example:6379", send: INFO }"#),
        "body_file": (
            #"{ name: api, url: "https://api.example.com/", body_file: \#(pki.path("root")) }"#,
            #"{ name: api, url: "https://api.example.com/", body_file: \#(pki.path("inter")) }"#
        ),
        // The key in the certificate's file: the certificate (and so the file) changes alone.
        "client_certificate": (
            #"{ name: api, url: "https://api.example.com/", client_certificate: \#(clients.path("client-combined")) }"#,
            #"{ name: api, url: "https://api.example.com/", client_certificate: \#(clients.path("stranger-combined")) }"#
        ),
    ]
    /// `starttls` has one valid value (true, on the kinds that need it); `client_key_password` cannot change
    /// alone and still decrypt the same key file (``clientKeyPassword()`` changes the file under it).
    static let loadTimeOnlyEndpointKeys: Set<String> = ["starttls", "client_key_password"]

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
        let others = Set(Self.otherEndpointChanges.keys).union(Self.loadTimeOnlyEndpointKeys)
        #expect(Set(Self.endpointChanges.keys).union(others) == Set(EndpointKey.names(in: .endpoint)))
        #expect(Set(Self.baseEndpoint.map(\.key)).union(others) == Set(EndpointKey.names(in: .endpoint)))
    }

    @Test("A change to a key of another kind's endpoint makes it unequal", arguments: otherEndpointChanges.keys.sorted())
    func otherEndpointKey(_ key: String) throws {
        let (before, after) = Self.otherEndpointChanges[key]!
        #expect(try Self.endpoint("endpoints:\n  - \(before)\n") == Self.endpoint("endpoints:\n  - \(before)\n"))
        #expect(try Self.endpoint("endpoints:\n  - \(before)\n") != Self.endpoint("endpoints:\n  - \(after)\n"))
    }

    @Test("A key file re-encrypted under another password, read with that password: a change")
    func clientKeyPassword() throws {
        let directory = try TemporaryDirectory()
        let key = directory.file("client.key")
        func endpoint(_ password: String) throws -> EndpointConfiguration {
            let yaml = """
                endpoints:
                  - { name: api, url: "https://api.example.com/", client_certificate: \(Self.clients.path("client")), client_key: \(key), client_key_password: "${KEY_PASSWORD}" }

                """
            return try #require(try loadConfiguration(yaml, environment: ["KEY_PASSWORD": password]).endpoints.first)
        }
        try FileManager.default.copyItem(atPath: Self.clients.path("client-encrypted", "key"), toPath: key)
        let before = try endpoint(ClientCertificatePKI.password)
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: Self.clients.path("client-encrypted-2", "key"), toPath: key)
        #expect(try endpoint(ClientCertificatePKI.otherPassword) != before)
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
