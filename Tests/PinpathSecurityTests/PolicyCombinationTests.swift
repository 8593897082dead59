import FoundationEssentials
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// Issue 11, rule 6: the entries of a ``HostPolicySet`` that match a host combine into the strictest policy,
/// whatever their order; their trust stores into one, or a refusal.
@Suite("Policy combination")
struct PolicyCombinationTests {
    let pki = TestPKI.shared

    func entry(_ pattern: String, _ policy: SecurityPolicy, store: TrustStore? = nil) throws -> HostPolicy {
        HostPolicy(patterns: [try HostPattern(parsing: pattern)], policy: policy, trustStore: store)
    }

    func pins(_ names: [String]) throws -> [SPKIPin] { try pki.chain(names).map(\.spkiPin) }

    @Test(
        "mode: none never cancels pins, in either order, and the combined policy rejects a chain the pins do not cover",
        arguments: [false, true])
    func noneDoesNotCancelPins(_ pinnedFirst: Bool) throws {
        let open = try entry("**.valid.test", try SecurityPolicy(mode: .none))
        let pinned = try entry("valid.test", try SecurityPolicy(mode: .publicKey, pins: try pins(["otherinter", "otherroot"])))
        let set = HostPolicySet(pinnedFirst ? [pinned, open] : [open, pinned])
        let policy = try #require(set.resolution(for: "valid.test")?.policy)
        #expect(policy.mode == .publicKey && policy.enforce)
        #expect(policy.notedHostname == "valid.test")
        let evaluation = try policy.evaluate(
            servedChain: try pki.chain(["valid", "inter"]), host: "valid.test", trustStore: try pki.trustStore())
        #expect(!evaluation.allowsConnection)
        #expect(try set.resolution(for: "www.valid.test")?.policy.mode == PinningMode.none)
    }

    @Test("certificate > public_key > none; pins and certificates united")
    func strictestMode() throws {
        let root = try pki.certificate("root")
        let set = HostPolicySet([
            try entry("a.test", try SecurityPolicy(mode: .publicKey, pins: try pins(["inter", "valid"]))),
            try entry("a.test", try SecurityPolicy(mode: .certificate, pinnedCertificates: [root])),
            try entry("a.test", try SecurityPolicy(mode: .none)),
        ])
        let policy = try #require(set.resolution(for: "a.test")?.policy)
        #expect(policy.mode == .certificate)
        #expect(policy.pinnedCertificates == [root])
        #expect(policy.pins == Set(try pins(["inter", "valid"]) + [root.spkiPin]))
    }

    @Test("Flags: enforce if any pinning entry enforces, validate the name if any does, allow invalid only if all do")
    func flags() throws {
        let pinsA = try pins(["inter", "root"])
        let reportOnly = try SecurityPolicy(mode: .publicKey, pins: pinsA, enforce: false)
        let lax = try SecurityPolicy(mode: .publicKey, pins: pinsA, allowInvalidCertificates: true, validatesDomainName: false)
        let strict = try SecurityPolicy(mode: .publicKey, pins: pinsA)
        let combined = try #require(
            HostPolicySet([try entry("a.test", reportOnly), try entry("a.test", lax), try entry("a.test", strict)]).resolution(
                for: "a.test")?.policy)
        #expect(combined.enforce && combined.validatesDomainName && !combined.allowInvalidCertificates)
        let allReportOnly = try #require(
            HostPolicySet([try entry("a.test", reportOnly), try entry("a.test", try SecurityPolicy(mode: .none))]).resolution(
                for: "a.test")?.policy)
        #expect(!allReportOnly.enforce, "a mode: none entry does not make report-only pins enforcing")
        let allLax = try #require(HostPolicySet([try entry("a.test", lax), try entry("a.test", lax)]).resolution(for: "a.test")?.policy)
        #expect(allLax.allowInvalidCertificates && !allLax.validatesDomainName)
    }

    @Test("Expiry: the latest of the pinning entries; never when one never expires")
    func expiry() throws {
        let early = Date(timeIntervalSince1970: 1_800_000_000)
        let late = Date(timeIntervalSince1970: 1_900_000_000)
        let pinsA = try pins(["inter", "root"])
        let a = try SecurityPolicy(mode: .publicKey, pins: pinsA, expires: early)
        let b = try SecurityPolicy(mode: .publicKey, pins: pinsA, expires: late)
        let never = try SecurityPolicy(mode: .publicKey, pins: pinsA)
        #expect(try HostPolicySet([try entry("a.test", a), try entry("a.test", b)]).resolution(for: "a.test")?.policy.expires == late)
        #expect(try HostPolicySet([try entry("a.test", b), try entry("a.test", never)]).resolution(for: "a.test")?.policy.expires == nil)
        #expect(
            try HostPolicySet([try entry("a.test", a), try entry("a.test", try SecurityPolicy(mode: .none))]).resolution(for: "a.test")?
                .policy.expires
                == early)
    }

    @Test("Trust stores: an entry without one defers; equal stores agree; different stores are refused")
    func stores() throws {
        let store = try pki.trustStore()
        let same = try TrustStore(caFile: pki.path("store"))
        let other = try TrustStore(caFile: pki.path("otherroot"))
        let none = try SecurityPolicy(mode: .none)
        let deferring = HostPolicySet([try entry("**.a.test", none), try entry("b.a.test", none, store: store)])
        #expect(try deferring.resolution(for: "b.a.test")?.trustStore == store)
        #expect(try deferring.resolution(for: "c.a.test")?.trustStore == nil)
        let agreeing = HostPolicySet([try entry("**.a.test", none, store: store), try entry("b.a.test", none, store: same)])
        #expect(try agreeing.resolution(for: "b.a.test")?.trustStore == store)
        let conflicting = HostPolicySet([try entry("**.a.test", none, store: store), try entry("b.a.test", none, store: other)])
        // The error carries the two entries in conflict, in configuration order, with the patterns that matched.
        let conflict = try #require(throws: HostPolicySet.Conflict.self) { try conflicting.resolution(for: "b.a.test") }
        #expect(conflict.host == "b.a.test" && conflict.code == .invalidPolicy)
        #expect(conflict.first.index == 0 && conflict.first.pattern.description == "**.a.test")
        #expect(conflict.second.index == 1 && conflict.second.pattern.description == "b.a.test")
        #expect(
            conflict.message
                == "b.a.test is matched by policies with different trust stores (**.a.test and b.a.test); give them the same CA file or make their hosts disjoint"
        )
        #expect(try conflicting.resolution(for: "c.a.test")?.trustStore == store)
    }

    /// Two patterns (with include-subdomains) and whether some host matches both.
    static let overlaps: [(String, Bool, String, Bool, Bool)] = [
        ("api.example.com", false, "**.example.com", false, true),
        ("api.example.com", false, "*.example.com", false, true),
        ("example.com", false, "*.example.com", false, false),
        ("example.com", true, "*.example.com", false, true),
        ("*.a.example.com", false, "*.example.com", false, false),
        ("*.a.example.com", false, "*.example.com", true, true),
        ("**.example.com", false, "**.example.net", false, false),
        ("x.example.com", false, "y.example.com", false, false),
        ("x.example.com", false, "example.com", true, true),
        ("::1", false, "::1", false, true),
        ("127.0.0.1", false, "::1", false, false),
    ]

    @Test("Overlap of host patterns", arguments: overlaps.indices)
    func overlap(_ index: Int) throws {
        let (first, firstSubdomains, second, secondSubdomains, expected) = Self.overlaps[index]
        let none = try SecurityPolicy(mode: .none)
        let a = HostPolicy(patterns: [try HostPattern(parsing: first)], includeSubdomains: firstSubdomains, policy: none)
        let b = HostPolicy(patterns: [try HostPattern(parsing: second)], includeSubdomains: secondSubdomains, policy: none)
        #expect((a.overlap(with: b) != nil) == expected, "\(first) / \(second)")
        #expect((b.overlap(with: a) != nil) == expected, "symmetric: \(second) / \(first)")
    }
}
