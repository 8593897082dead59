import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// The name rules of the verification profile (`webpki.san_required`, `webpki.cn_in_san`,
/// `rfc5280.san_dns_syntax`, …), each attacked with a chain generated for it that breaks only that rule, and
/// answered with one that satisfies it, through the public `SecurityPolicy.evaluate` in mode none as an
/// external harness calls it.
@Suite("Profile rules: names")
struct NameRulesTests {
    static let pki = NamesPKI.shared

    /// A root and a leaf under it with `subject` and `extensions`; `prefix` keeps file names unique.
    static func chain(_ prefix: String, subject: String, extensions: [String]) throws -> (leaf: Certificate, root: Certificate) {
        let root = try pki.root("\(prefix)-root")
        let leaf = try pki.leaf("\(prefix)-leaf", issuer: "\(prefix)-root", subject: subject, extensions: extensions)
        return (leaf, root)
    }

    /// The failure of evaluating `[leaf]` for `host` against `root` alone under `profile`, `nil` when trusted.
    static func failure(
        _ chain: (leaf: Certificate, root: Certificate), host: String, profile: VerificationProfile
    ) throws -> TrustFailure? {
        try failure(served: [chain.leaf], anchor: chain.root, host: host, profile: profile)
    }

    /// The failure of evaluating `served` (leaf first) for `host` against `anchor` alone, `nil` when trusted.
    static func failure(
        served: [Certificate], anchor: Certificate, host: String, profile: VerificationProfile
    ) throws -> TrustFailure? {
        let policy = try SecurityPolicy(mode: .none, profile: ProfileSelection(profile))
        return try policy.evaluate(servedChain: served, host: host, trustStore: TrustStore(certificates: [anchor])).failure
    }

    /// Expects a rejection by `rule` at `depth`, named in the message.
    static func expectRejected(
        _ failure: TrustFailure?, by rule: String, depth: Int = 0, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(failure?.violation?.rule == rule, "\(failure?.message ?? "trusted")", sourceLocation: sourceLocation)
        #expect(failure?.violation?.depth == depth, sourceLocation: sourceLocation)
        #expect(failure?.reason == .chainInvalid, sourceLocation: sourceLocation)
        #expect(
            failure?.message.contains("rule \(rule) at depth \(depth)") == true, "\(failure?.message ?? "trusted")",
            sourceLocation: sourceLocation)
    }

    static func expectTrusted(_ failure: TrustFailure?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(failure == nil, "\(failure?.message ?? "")", sourceLocation: sourceLocation)
    }

    static func expectTrustedUnderBoth(
        _ chain: (leaf: Certificate, root: Certificate), host: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        for profile in [VerificationProfile.webpki, .rfc5280] {
            expectTrusted(try failure(chain, host: host, profile: profile), sourceLocation: sourceLocation)
        }
    }

    @Test("Each table's rows are all exercised by its parameterized test (the argument ranges are literal)")
    func tablesCovered() {
        #expect(Self.malformedSANs.count == 5)
        #expect(Self.commonNames.count == 20)
        #expect(NameConstraintRulesTests.malformedConstraints.count == 9)
    }

    // MARK: webpki.san_required and the commonName fallback

    @Test("A CN-only leaf: webpki never takes the CN for the host (webpki.san_required); rfc5280 keeps the fallback")
    func commonNameOnly() throws {
        let chain = try Self.chain("cnonly", subject: "/CN=cnonly.example.com", extensions: [])
        let refused = try Self.failure(chain, host: "cnonly.example.com", profile: .webpki)
        Self.expectRejected(refused, by: "webpki.san_required")
        #expect(refused?.message.contains("(a Baseline Requirements rule, not in rfc5280)") == true)
        Self.expectTrusted(try Self.failure(chain, host: "cnonly.example.com", profile: .rfc5280))
        // Another host is a plain host mismatch under both: the rule is named only when it alone decided.
        for profile in [VerificationProfile.webpki, .rfc5280] {
            let other = try Self.failure(chain, host: "other.example.com", profile: profile)
            #expect(other?.reason == .hostMismatch && other?.violation == nil, "\(profile): \(other?.message ?? "trusted")")
        }
        // The same leaf with a SAN is fine under both.
        let named = try Self.chain("cnsan", subject: "/CN=cnonly.example.com", extensions: ["subjectAltName=DNS:cnonly.example.com"])
        try Self.expectTrustedUnderBoth(named, host: "cnonly.example.com")
    }

    @Test("A leaf whose only DNS name is its CN, next to an IP SAN, is not valid for that name under webpki")
    func commonNameBesideAddress() throws {
        let chain = try Self.chain("cnip", subject: "/CN=cnip.example.com", extensions: ["subjectAltName=IP:192.0.2.7"])
        let refused = try Self.failure(chain, host: "cnip.example.com", profile: .webpki)
        #expect(refused?.reason == .hostMismatch, "\(refused?.message ?? "trusted")")
        Self.expectTrusted(try Self.failure(chain, host: "192.0.2.7", profile: .webpki))
    }

    // MARK: rfc5280.san_well_formed

    /// OpenSSL's codes for what its strict flag refuses of a SAN (x509_vfy.h).
    enum X509VerifyError {
        static let emptySubjectAltName: Int32 = 87
        static let emptySubjectSANNotCritical: Int32 = 88
    }

    /// Leaves whose SAN extension is broken in one way; the CN-free ones name 192.0.2.1 or valid.example.com.
    static let malformedSANs: [(name: String, subject: String, extensions: [String], host: String)] = [
        // "example.com" as raw bytes instead of a GeneralNames sequence.
        ("undecodable", "/CN=example.com", ["subjectAltName=DER:6578616d706c652e636f6d"], "example.com"),
        // An empty GeneralNames sequence.
        ("empty", "/CN=example.com", ["subjectAltName=DER:3000"], "example.com"),
        // 192.0.2.0/24 as an 8-byte iPAddress, then 192.0.2.1.
        ("iprange", "/CN=192.0.2.1", ["subjectAltName=DER:30108708c0000200ffffff008704c0000201"], "192.0.2.1"),
        ("email", "/CN=valid.example.com", ["subjectAltName=DNS:valid.example.com,email:a@b@example.com"], "valid.example.com"),
        ("emptysubject", "/", ["subjectAltName=DNS:valid.example.com"], "valid.example.com"),
    ]

    @Test("Malformed SANs are rejected under both profiles (rfc5280.san_well_formed)", arguments: 0..<5)
    func malformedSubjectAlternativeNames(_ index: Int) throws {
        let row = Self.malformedSANs[index]
        let chain = try Self.chain("badsan-\(row.name)", subject: row.subject, extensions: row.extensions)
        for profile in [VerificationProfile.webpki, .rfc5280] {
            let failure = try Self.failure(chain, host: row.host, profile: profile)
            if row.name == "undecodable" {
                // OpenSSL 3.0 marks the certificate invalid and cannot even find its issuer.
                #expect(failure?.reason == .chainInvalid, "\(row.name): \(failure?.message ?? "trusted")")
            } else if row.name == "empty" || row.name == "emptysubject" {
                // X509_V_FLAG_X509_STRICT refuses these itself, before any rule runs: an empty SAN (87), an empty
                // subject with a SAN that is not critical (88).
                let expected = row.name == "empty" ? X509VerifyError.emptySubjectAltName : X509VerifyError.emptySubjectSANNotCritical
                #expect(failure?.reason == .chainInvalid, "\(row.name): \(failure?.message ?? "trusted")")
                #expect(failure?.verifyError == expected, "\(row.name): \(failure?.message ?? "trusted")")
            } else {
                Self.expectRejected(failure, by: "rfc5280.san_well_formed")
            }
        }
    }

    @Test("An empty subject with a critical SAN is accepted under both profiles")
    func emptySubjectCriticalSAN() throws {
        let chain = try Self.chain("emptysubject-ok", subject: "/", extensions: ["subjectAltName=critical,DNS:valid.example.com"])
        try Self.expectTrustedUnderBoth(chain, host: "valid.example.com")
    }

    // MARK: webpki.san_not_critical

    @Test("A critical SAN beside a non-empty subject: webpki rejects (webpki.san_not_critical), rfc5280 accepts")
    func criticalSANWithSubject() throws {
        let chain = try Self.chain(
            "critsan", subject: "/CN=valid.example.com", extensions: ["subjectAltName=critical,DNS:valid.example.com"])
        Self.expectRejected(try Self.failure(chain, host: "valid.example.com", profile: .webpki), by: "webpki.san_not_critical")
        Self.expectTrusted(try Self.failure(chain, host: "valid.example.com", profile: .rfc5280))
    }

    // MARK: rfc5280.san_dns_syntax

    static let badDNSNames = [
        "foo_bar.example.com", "w*.example.com", "*.*.example.com", "www.*.example.com", "xn--*-1b3c148a.example.com",
        "a..example.com", ".example.com", "example.com.", "-lead.example.com", "\(String(repeating: "a", count: 64)).example.com",
        "*",
    ]

    @Test("A DNS SAN outside the preferred name syntax is rejected under both profiles (rfc5280.san_dns_syntax)", arguments: badDNSNames)
    func dnsSyntax(_ bad: String) throws {
        // Named by the row's position: ".example.com" and "example.com." would share any name made of their
        // letters, and the rows run concurrently.
        let index = try #require(Self.badDNSNames.firstIndex(of: bad))
        let chain = try Self.chain(
            "dns-bad-\(index)", subject: "/CN=valid.example.com",
            extensions: ["subjectAltName=DNS:valid.example.com,DNS:\(bad)"])
        for profile in [VerificationProfile.webpki, .rfc5280] {
            Self.expectRejected(try Self.failure(chain, host: "valid.example.com", profile: profile), by: "rfc5280.san_dns_syntax")
        }
    }

    @Test("A non-ASCII DNS SAN (an emoji, encoded raw) is rejected: names are stored in their xn-- form")
    func dnsNotASCII() throws {
        // GeneralNames { dNSName "😜.example.com" } in UTF-8, which IA5String cannot hold.
        let chain = try Self.chain(
            "dns-emoji", subject: "/CN=valid.example.com",
            extensions: ["subjectAltName=DER:3025821176616c69642e6578616d706c652e636f6d8210f09f989c2e6578616d706c652e636f6d"])
        for profile in [VerificationProfile.webpki, .rfc5280] {
            let failure = try Self.failure(chain, host: "valid.example.com", profile: profile)
            Self.expectRejected(failure, by: "rfc5280.san_dns_syntax")
            #expect(failure?.message.contains("not ASCII") == true)
        }
    }

    @Test("Valid DNS names, a leftmost wildcard and IDN A-labels are accepted under both profiles")
    func dnsSyntaxAccepted() throws {
        let chain = try Self.chain(
            "dns-ok", subject: "/CN=valid.example.com",
            extensions: ["subjectAltName=DNS:valid.example.com,DNS:*.wild.example.com,DNS:xn--bcher-kva.example.com,DNS:a-b.9.example.com"])
        for profile in [VerificationProfile.webpki, .rfc5280] {
            Self.expectTrusted(try Self.failure(chain, host: "x.wild.example.com", profile: profile))
            Self.expectTrusted(try Self.failure(chain, host: "XN--BCHER-KVA.example.com", profile: profile))
        }
    }

    // MARK: webpki.cn_in_san

    /// (commonName, SAN, host, whether webpki accepts it): the first ten are not a character-for-character
    /// copy of a SAN nor its domain; rfc5280 accepts every row.
    static let commonNames: [(cn: String, san: String, host: String, webpki: Bool)] = [
        ("Example.COM", "DNS:example.com", "example.com", false),
        ("notinsan.example.com", "DNS:valid.example.com,DNS:another.example.com", "valid.example.com", false),
        ("xn--nxasmq6b.com", "DNS:xn--n3h.com", "xn--n3h.com", false),
        ("test-測試.com", "DNS:xn--test--wg5h0h.com", "xn--test--wg5h0h.com", false),
        ("0xC0A80101", "IP:192.168.1.1", "192.168.1.1", false),
        ("192.168.001.001", "IP:192.168.1.1", "192.168.1.1", false),
        ("2001:DB8::8A2E:370:7334", "IP:2001:db8::8a2e:370:7334", "2001:db8::8a2e:370:7334", false),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", "IP:2001:db8::1", "2001:db8::1", false),
        ("2001:db8:0:0:1:0:0:1", "IP:2001:db8::1:0:0:1", "2001:db8::1:0:0:1", false),
        ("192.0.2.9", "DNS:valid.example.com", "valid.example.com", false),
        ("valid.example.com", "DNS:other.example.com,DNS:valid.example.com", "other.example.com", true),
        ("*.wild.example.com", "DNS:*.wild.example.com", "a.wild.example.com", true),
        ("192.168.1.1", "IP:192.168.1.1", "192.168.1.1", true),
        ("2001:db8::1:0:0:1", "IP:2001:db8::1:0:0:1", "2001:db8::1:0:0:1", true),
        // The domain a DNS SAN lies in, on a label boundary (deliberate, see the rule); never a name below it.
        ("example.com", "DNS:*.example.com", "foo.example.com", true),
        ("example.com", "DNS:foo.bar.example.com", "foo.bar.example.com", true),
        ("ample.com", "DNS:www.example.com", "www.example.com", false),
        ("www.example.com", "DNS:example.com", "example.com", false),
        // No DNS SAN to copy: a CN that is not an address is left alone (deliberate, see the rule).
        ("Loopback", "IP:127.0.0.1", "127.0.0.1", true),
        // Neither an address nor a dotted name: cannot pass for a host, left alone (deliberate, see the rule).
        ("Pinned Server", "DNS:valid.example.com,IP:127.0.0.1", "valid.example.com", true),
    ]

    @Test(
        "A CN that is neither a SAN as written there nor the domain one lies in: webpki rejects (webpki.cn_in_san); rfc5280 accepts all",
        arguments: 0..<20)
    func commonNameInSAN(_ index: Int) throws {
        let row = Self.commonNames[index]
        let chain = try Self.chain("cn-\(index)", subject: "/CN=\(row.cn)", extensions: ["subjectAltName=\(row.san)"])
        let webpki = try Self.failure(chain, host: row.host, profile: .webpki)
        if row.webpki { Self.expectTrusted(webpki) } else { Self.expectRejected(webpki, by: "webpki.cn_in_san") }
        Self.expectTrusted(try Self.failure(chain, host: row.host, profile: .rfc5280))
    }

    // MARK: webpki.wildcard_public_suffix

    @Test("A wildcard over a public suffix: webpki rejects (webpki.wildcard_public_suffix), rfc5280 accepts")
    func wildcardOverPublicSuffix() throws {
        let twoLabels = try Self.chain("psl-couk", subject: "/CN=*.co.uk", extensions: ["subjectAltName=DNS:*.co.uk"])
        let refused = try Self.failure(twoLabels, host: "victim.co.uk", profile: .webpki)
        Self.expectRejected(refused, by: "webpki.wildcard_public_suffix")
        #expect(refused?.message.contains("\"co.uk\"") == true)
        Self.expectTrusted(try Self.failure(twoLabels, host: "victim.co.uk", profile: .rfc5280))

        // OpenSSL will not match *.com itself, but the certificate still claims every .com name.
        let extra = try Self.chain("psl-com", subject: "/CN=example.com", extensions: ["subjectAltName=DNS:example.com,DNS:*.com"])
        Self.expectRejected(try Self.failure(extra, host: "example.com", profile: .webpki), by: "webpki.wildcard_public_suffix")
    }

    @Test("Wildcards under a registrable domain, a private-section suffix or an unlisted TLD are accepted")
    func wildcardUnderRegistrableDomain() throws {
        for (index, (name, host)) in [("*.example.co.uk", "a.example.co.uk"), ("*.github.io", "user.github.io")].enumerated() {
            let chain = try Self.chain("psl-ok-\(index)", subject: "/CN=\(name)", extensions: ["subjectAltName=DNS:\(name)"])
            Self.expectTrusted(try Self.failure(chain, host: host, profile: .webpki))
        }
        // OpenSSL never matches a wildcard over one label, so only a second name makes *.corp reachable here.
        let unlisted = try Self.chain(
            "psl-ok-corp", subject: "/CN=valid.example.com", extensions: ["subjectAltName=DNS:valid.example.com,DNS:*.corp"])
        Self.expectTrusted(try Self.failure(unlisted, host: "valid.example.com", profile: .webpki))
    }
}
