import FoundationEssentials
import Testing

@testable import PinpathSecurity

/// `revocation: ocsp` as a policy value: `soft_fail` only beside it, hard fail wins when entries combine, and
/// the cache of responders' answers stays bounded.
@Suite("OCSP policy and cache")
struct OCSPPolicyTests {
    func entry(_ policy: SecurityPolicy) throws -> HostPolicy {
        HostPolicy(patterns: [try HostPattern(parsing: "a.test")], policy: policy)
    }

    @Test(
        "soft_fail is refused beside any revocation mode but ocsp, naming both keys",
        arguments: [RevocationMode.none, .stapled, .requireStapled])
    func softFailNeedsOCSP(_ mode: RevocationMode) throws {
        let error = #expect(throws: SecurityError.self) { try SecurityPolicy(mode: .none, revocation: mode, ocspSoftFail: true) }
        #expect(error?.code == .invalidPolicy)
        #expect(error?.message.contains("soft_fail applies to revocation: ocsp only") == true, "\(error?.message ?? "")")
        #expect(try SecurityPolicy(mode: .none, revocation: .ocsp, ocspSoftFail: true).ocspSoftFail)
        #expect(try !SecurityPolicy(mode: .none, revocation: .ocsp).ocspSoftFail, "hard fail is the default")
    }

    @Test("combined entries: ocsp beats stapled, and soft fail holds only when every ocsp entry allows it")
    func combining() throws {
        let soft = try SecurityPolicy(mode: .none, revocation: .ocsp, ocspSoftFail: true)
        let hard = try SecurityPolicy(mode: .none, revocation: .ocsp)
        let stapled = try SecurityPolicy(mode: .none, revocation: .stapled)
        let both = try #require(HostPolicySet([try entry(soft), try entry(hard)]).resolution(for: "a.test")?.policy)
        #expect(both.revocation == .ocsp)
        #expect(!both.ocspSoftFail)
        let softOnly = try #require(HostPolicySet([try entry(stapled), try entry(soft)]).resolution(for: "a.test")?.policy)
        #expect(softOnly.revocation == .ocsp)
        #expect(softOnly.ocspSoftFail)
        let required = try #require(
            HostPolicySet([try entry(soft), try entry(try SecurityPolicy(mode: .none, revocation: .requireStapled))]).resolution(
                for: "a.test")?.policy)
        #expect(required.revocation == .requireStapled)
        #expect(!required.ocspSoftFail)
    }

    @Test("the cache holds at most its capacity, dropping what expires first, and forgets failures after a minute")
    func cacheBounded() {
        let cache = OCSPResponseCache(capacity: 3)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0..<5 {
            cache.store(.unavailable("down \(index)"), for: "id\(index)", now: now.addingTimeInterval(Double(index)))
        }
        #expect(cache.count == 3)
        #expect(cache.entry(for: "id0", now: now.addingTimeInterval(5)) == nil)
        #expect(cache.entry(for: "id4", now: now.addingTimeInterval(5)) != nil)
        #expect(cache.entry(for: "id4", now: now.addingTimeInterval(4 + OCSPResponseCache.unavailableLifetime + 1)) == nil)
    }
}
