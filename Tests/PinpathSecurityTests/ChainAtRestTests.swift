import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// The library's entry points for chains at rest: ``TLSAudit/init(chainAtRest:file:options:)`` and the
/// overrides of ``SecurityPolicy/evaluate(servedChain:host:port:trustStore:verificationTime:now:profile:maximumDepth:)``.
@Suite("Chains at rest (library)")
struct ChainAtRestTests {
    @Test("TLSAudit from a chain at rest: the verdicts of a served chain, the host checked only when named")
    func audit() throws {
        let pki = TestPKI.shared
        let options = TLSAudit.Options(policy: try SecurityPolicy(mode: .none), trustStore: try pki.trustStore(), serverName: "valid.test")
        let valid = TLSAudit(chainAtRest: try pki.chain(["valid", "inter"]), file: "valid.pem", options: options)
        #expect(valid.outcome == .trusted)
        #expect(valid.chainFile == "valid.pem" && valid.address == nil && valid.protocolVersion == nil)
        #expect(
            valid.evaluation?.verifiedChain.map(\.subject) == ["CN=valid.test", "CN=Pinpath Test Intermediate", "CN=Pinpath Test Root"])

        let wrongHost = TLSAudit(chainAtRest: try pki.chain(["wronghost", "inter"]), file: "w.pem", options: options)
        #expect(wrongHost.outcome == .hostMismatch)
        var unnamed = options
        unnamed.serverName = nil
        let anyHost = TLSAudit(chainAtRest: try pki.chain(["wronghost", "inter"]), file: "w.pem", options: unnamed)
        #expect(anyHost.outcome == .trusted)
        #expect(anyHost.hostVerdict == nil && anyHost.evaluation?.policy.validatesDomainName == false)

        var later = options
        // The second after notAfter (2045-01-01T00:00:00Z, which is still valid: RFC 5280 counts it).
        later.verificationTime = Date(timeIntervalSince1970: 2_366_841_601)
        let expired = TLSAudit(chainAtRest: try pki.chain(["valid", "inter"]), file: "valid.pem", options: later)
        #expect(expired.outcome == .chainInvalid)
        #expect(expired.evaluation?.failure?.verifyError == 10)
    }

    @Test("evaluate(...profile:maximumDepth:) overrides the policy's and reports the policy applied; the old call shape still works")
    func overrides() throws {
        let pki = TestPKI.shared
        let policy = try SecurityPolicy(mode: .none, maximumChainDepth: 5)
        let chain = try pki.chain(["valid", "inter"])
        let plain = try policy.evaluate(
            servedChain: chain, host: "valid.test", port: 443, trustStore: try pki.trustStore(), verificationTime: nil)
        #expect(plain.verdict == .trusted)
        #expect(plain.policy.profile == .auto && plain.policy.maximumChainDepth == 5)
        #expect(plain.appliedProfile?.description == "rfc5280 (anchor from ca_file)")
        let overridden = try policy.evaluate(
            servedChain: chain, host: "valid.test", trustStore: try pki.trustStore(), profile: .rfc5280, maximumDepth: 3)
        #expect(overridden.verdict == .trusted)
        #expect(overridden.policy.profile == .rfc5280 && overridden.policy.maximumChainDepth == 3)
        #expect(overridden.appliedProfile?.description == "rfc5280 (profile: rfc5280)")
        #expect(policy.profile == .auto)  // the policy itself is unchanged
        #expect(throws: SecurityError.self) {
            try policy.evaluate(servedChain: chain, host: "valid.test", trustStore: try pki.trustStore(), maximumDepth: 0)
        }
    }
}
