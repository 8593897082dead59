import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// The name-constraint rules of the verification profile, each attacked with a generated chain (root →
/// constrained intermediate → leaf) that breaks only that rule, and answered with one that satisfies it;
/// plus what OpenSSL already enforces, so that a regression there is seen too.
@Suite("Profile rules: name constraints")
struct NameConstraintRulesTests {
    static let pki = NamesPKI.shared

    /// Root `prefix-root` → intermediate `prefix-ca` carrying `constraints` (a `nameConstraints=` value) →
    /// leaf with `subject` and `leafExtensions`.
    static func chain(
        _ prefix: String, constraints: String, subject: String, leafExtensions: [String]
    ) throws -> (served: [Certificate], root: Certificate) {
        let root = try pki.root("\(prefix)-root")
        let ca = try pki.intermediate("\(prefix)-ca", issuer: "\(prefix)-root", extensions: ["nameConstraints=\(constraints)"])
        let leaf = try pki.leaf("\(prefix)-leaf", issuer: "\(prefix)-ca", subject: subject, extensions: leafExtensions)
        return ([leaf, ca], root)
    }

    static func failure(
        _ chain: (served: [Certificate], root: Certificate), host: String, profile: VerificationProfile
    ) throws -> TrustFailure? {
        try NameRulesTests.failure(served: chain.served, anchor: chain.root, host: host, profile: profile)
    }

    static let profiles = [VerificationProfile.webpki, .rfc5280]

    // MARK: rfc5280.name_constraints_wildcards

    @Test("A wildcard SAN that can expand into an excluded subtree is rejected (rfc5280.name_constraints_wildcards)")
    func wildcardIntoExcludedSubtree() throws {
        let chain = try Self.chain(
            "ncwild", constraints: "critical,excluded;DNS:admin.example.com", subject: "/CN=*.example.com",
            leafExtensions: ["subjectAltName=DNS:*.example.com"])
        for profile in Self.profiles {
            // The attack: a certificate the constrained CA may not issue for admin.example.com, presented for it
            // or for any sibling.
            for host in ["admin.example.com", "www.example.com"] {
                let failure = try Self.failure(chain, host: host, profile: profile)
                if host == "admin.example.com" {
                    #expect(failure != nil, "\(profile): trusted for the excluded name")
                } else {
                    NameRulesTests.expectRejected(failure, by: "rfc5280.name_constraints_wildcards", depth: 1)
                }
            }
        }
    }

    @Test("The CN of a CN-only wildcard leaf is a DNS name for the constraint check too (rfc5280 profile)")
    func commonNameWildcardIntoExcludedSubtree() throws {
        let chain = try Self.chain(
            "ncwildcn", constraints: "critical,excluded;DNS:admin.example.com", subject: "/CN=*.example.com",
            leafExtensions: [])
        NameRulesTests.expectRejected(
            try Self.failure(chain, host: "www.example.com", profile: .rfc5280), by: "rfc5280.name_constraints_wildcards",
            depth: 1)
    }

    @Test("Wildcards beside an excluded subtree they cannot reach, or under a permitted one, are accepted")
    func wildcardOutsideExcludedSubtree() throws {
        let sibling = try Self.chain(
            "ncwild-ok", constraints: "critical,excluded;DNS:admin.example.com,excluded;DNS:a.b.www.example.com",
            subject: "/CN=*.www.example.com", leafExtensions: ["subjectAltName=DNS:*.www.example.com"])
        let permitted = try Self.chain(
            "ncwild-permit", constraints: "critical,permitted;DNS:example.com", subject: "/CN=*.example.com",
            leafExtensions: ["subjectAltName=DNS:*.example.com"])
        for profile in Self.profiles {
            NameRulesTests.expectTrusted(try Self.failure(sibling, host: "x.www.example.com", profile: profile))
            NameRulesTests.expectTrusted(try Self.failure(permitted, host: "x.example.com", profile: profile))
        }
    }

    @Test("OpenSSL already refuses a wildcard under a narrower permitted subtree, and the excluded parent domain")
    func wildcardOpenSSLAlreadyRefuses() throws {
        let narrower = try Self.chain(
            "ncwild-narrow", constraints: "critical,permitted;DNS:www.example.com", subject: "/CN=*.example.com",
            leafExtensions: ["subjectAltName=DNS:*.example.com"])
        let parent = try Self.chain(
            "ncwild-parent", constraints: "critical,excluded;DNS:example.com", subject: "/CN=*.example.com",
            leafExtensions: ["subjectAltName=DNS:*.example.com"])
        for profile in Self.profiles {
            #expect(try Self.failure(narrower, host: "a.example.com", profile: profile)?.verifyError == 47)  // permitted violation
            #expect(try Self.failure(parent, host: "a.example.com", profile: profile)?.verifyError == 48)  // excluded violation
        }
    }

    // MARK: rfc5280.name_constraints_well_formed

    /// Constraint values (openssl config, or DER) that are malformed in one way each.
    static let malformedConstraints: [(name: String, constraints: String)] = [
        ("leading period", "critical,permitted;DNS:.example.com"),
        ("wildcard", "critical,excluded;DNS:*.example.com"),
        ("underscore", "critical,excluded;DNS:bad_name.example.com"),
        // NameConstraints ::= SEQUENCE {} (neither subtree).
        ("no subtree", "critical,DER:3000"),
        // permittedSubtrees [0] {} and excludedSubtrees [1] {}: both present, both empty.
        ("both empty", "critical,DER:3004a000a100"),
        // permitted iPAddress 127.0.0.1 with no mask (4 bytes).
        ("address without mask", "critical,DER:300aa008300687047f000001"),
        ("mask not a prefix", "critical,excluded;IP:10.0.0.0/255.0.255.0"),
        ("IPv6 mask not a prefix", "critical,excluded;IP:2001:db8::/ffff:0:ffff::"),
        ("email with two @", "critical,permitted;email:invalid@invalid@example.com"),
    ]

    @Test("Malformed name constraints are rejected under both profiles (rfc5280.name_constraints_well_formed)", arguments: 0..<9)
    func malformedConstraints(_ index: Int) throws {
        let row = Self.malformedConstraints[index]
        let chain = try Self.chain(
            "ncbad-\(index)", constraints: row.constraints, subject: "/CN=foo.example.com",
            leafExtensions: ["subjectAltName=DNS:foo.example.com"])
        for profile in Self.profiles {
            let failure = try Self.failure(chain, host: "foo.example.com", profile: profile)
            NameRulesTests.expectRejected(failure, by: "rfc5280.name_constraints_well_formed", depth: 1)
        }
    }

    @Test("Well-formed constraints of each kind are accepted under both profiles")
    func wellFormedConstraints() throws {
        let chain = try Self.chain(
            "ncgood",
            constraints: "critical,permitted;DNS:example.com,permitted;IP:192.0.2.0/255.255.255.0,"
                + "permitted;IP:2001:db8::/ffff:ffff::,excluded;DNS:admin.example.com,excluded;email:example.net,"
                + "excluded;URI:.example.net",
            subject: "/CN=foo.example.com",
            leafExtensions: ["subjectAltName=DNS:foo.example.com,IP:192.0.2.5,IP:2001:db8::5"])
        for profile in Self.profiles {
            for host in ["foo.example.com", "192.0.2.5", "2001:db8::5"] {
                NameRulesTests.expectTrusted(try Self.failure(chain, host: host, profile: profile))
            }
        }
    }

    // MARK: rfc5280.name_constraints_only_on_cas

    @Test("A leaf that carries name constraints is rejected under both profiles (rfc5280.name_constraints_only_on_cas)")
    func constraintsOnLeaf() throws {
        let root = try Self.pki.root("ncleaf-root")
        let leaf = try Self.pki.leaf(
            "ncleaf-leaf", issuer: "ncleaf-root", subject: "/CN=foo.example.com",
            extensions: ["subjectAltName=DNS:foo.example.com", "nameConstraints=critical,permitted;DNS:other.example"])
        for profile in Self.profiles {
            NameRulesTests.expectRejected(
                try NameRulesTests.failure(served: [leaf], anchor: root, host: "foo.example.com", profile: profile),
                by: "rfc5280.name_constraints_only_on_cas")
        }
    }

    // MARK: rfc5280.name_constraints_critical

    @Test("Non-critical name constraints: rfc5280 rejects (rfc5280.name_constraints_critical), webpki accepts (BR exception)")
    func nonCriticalConstraints() throws {
        let chain = try Self.chain(
            "ncnoncrit", constraints: "permitted;DNS:example.com", subject: "/CN=foo.example.com",
            leafExtensions: ["subjectAltName=DNS:foo.example.com"])
        NameRulesTests.expectRejected(
            try Self.failure(chain, host: "foo.example.com", profile: .rfc5280), by: "rfc5280.name_constraints_critical",
            depth: 1)
        NameRulesTests.expectTrusted(try Self.failure(chain, host: "foo.example.com", profile: .webpki))
    }

    // MARK: what OpenSSL enforces and the rules rely on

    @Test("OpenSSL's own constraint checks: every SAN of the leaf (DNS, IPv4, IPv6), the CN as a DNS name, intermediates' SANs")
    func openSSLConstraintChecks() throws {
        let constraints =
            "critical,permitted;DNS:example.com,permitted;IP:192.0.2.0/255.255.255.0,"
            + "permitted;IP:2001:db8::/ffff:ffff::,excluded;DNS:admin.example.com,excluded;IP:2001:db8:bad::/ffff:ffff:ffff::"
        let cases: [(name: String, subject: String, san: [String], host: String)] = [
            ("second DNS SAN outside", "/CN=foo.example.com", ["subjectAltName=DNS:foo.example.com,DNS:evil.test"], "foo.example.com"),
            ("IPv4 SAN outside", "/CN=foo.example.com", ["subjectAltName=DNS:foo.example.com,IP:198.51.100.1"], "foo.example.com"),
            ("IPv6 SAN excluded", "/CN=foo.example.com", ["subjectAltName=DNS:foo.example.com,IP:2001:db8:bad::1"], "foo.example.com"),
            ("IPv6 SAN outside", "/CN=2001:db9::1", ["subjectAltName=IP:2001:db9::1"], "2001:db9::1"),
            ("excluded DNS SAN", "/CN=admin.example.com", ["subjectAltName=DNS:admin.example.com"], "admin.example.com"),
        ]
        for (index, row) in cases.enumerated() {
            let chain = try Self.chain("ncossl-\(index)", constraints: constraints, subject: row.subject, leafExtensions: row.san)
            for profile in Self.profiles {
                let failure = try Self.failure(chain, host: row.host, profile: profile)
                #expect([47, 48].contains(failure?.verifyError), "\(row.name), \(profile): \(failure?.message ?? "trusted")")
            }
        }
        // A CN-only leaf (rfc5280 only: webpki refuses it for having no SAN) whose CN is outside the subtree.
        let cnOnly = try Self.chain("ncossl-cn", constraints: constraints, subject: "/CN=admin.example.com", leafExtensions: [])
        #expect(try Self.failure(cnOnly, host: "admin.example.com", profile: .rfc5280)?.verifyError == 48)
        // An intermediate whose SAN is excluded by the CA above it, under a leaf that is fine.
        let root = try Self.pki.root("ncossl-mid-root")
        let constrained = try Self.pki.intermediate(
            "ncossl-mid-ca", issuer: "ncossl-mid-root", extensions: ["nameConstraints=\(constraints)"])
        let named = try Self.pki.intermediate(
            "ncossl-mid-named", issuer: "ncossl-mid-ca", extensions: ["subjectAltName=DNS:admin.example.com"])
        let leaf = try Self.pki.leaf(
            "ncossl-mid-leaf", issuer: "ncossl-mid-named", subject: "/CN=foo.example.com",
            extensions: ["subjectAltName=DNS:foo.example.com"])
        for profile in Self.profiles {
            let failure = try NameRulesTests.failure(
                served: [leaf, named, constrained], anchor: root, host: "foo.example.com", profile: profile)
            #expect(failure?.verifyError == 48, "\(profile): \(failure?.message ?? "trusted")")
        }
    }
}
