import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// CRL checking through ``SecurityPolicy/evaluate(servedChain:host:port:trustStore:verificationTime:now:crls:)``,
/// with CRLs made by `openssl ca -revoke` / `-gencrl` at test time (``RevocationPKI``).
@Suite("Certificate revocation lists")
struct RevocationListTests {
    let pki = RevocationPKI.shared

    /// One chain and the CRL files given, with the reason and depth expected (`nil`: trusted).
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var chain: [String]
        var crlFiles: [String]
        var reason: String?
        var depth: Int?
        var messagePart: String?
        var testDescription: String { name }
    }

    static let cases = [
        Case(name: "good leaf, every CRL current", chain: ["good", "inter"], crlFiles: ["all"], reason: nil, depth: nil),
        Case(
            name: "good leaf, CRLs in separate files, one DER", chain: ["good", "inter"], crlFiles: ["root", "inter.der"], reason: nil,
            depth: nil),
        Case(
            name: "revoked leaf", chain: ["revoked", "inter"], crlFiles: ["all"], reason: "revoked", depth: 0,
            messagePart: "certificate revoked at depth 0 (CN=valid.test)"),
        Case(
            name: "revoked intermediate", chain: ["underrevoked", "revokedinter"], crlFiles: ["all"], reason: "revoked", depth: 1,
            messagePart: "certificate revoked at depth 1 (CN=Revoked Intermediate)"),
        Case(
            name: "no CRL from the leaf's issuer", chain: ["good", "inter"], crlFiles: ["rootonly"], reason: "crl_missing", depth: 0,
            messagePart: "unable to get certificate CRL"),
        Case(
            name: "no CRL from the intermediate's issuer", chain: ["good", "inter"], crlFiles: ["inter"], reason: "crl_missing", depth: 1),
        Case(
            name: "stale CRL (nextUpdate passed)", chain: ["good", "inter"], crlFiles: ["root", "inter-stale"], reason: "crl_stale",
            depth: 0, messagePart: "CRL has expired"),
        Case(
            name: "CRL signed by a CA without cRLSign", chain: ["undernocrlsign", "nocrlsign"], crlFiles: ["all"], reason: "crl_invalid",
            depth: 0, messagePart: "key usage does not include CRL signing"),
        Case(
            name: "CRL with an unknown critical extension", chain: ["good", "inter"], crlFiles: ["root", "inter-critical"],
            reason: "crl_invalid", depth: 0, messagePart: "unhandled critical CRL extension"),
    ]

    @Test("SecurityPolicy.evaluate with crls:", arguments: cases)
    func evaluate(_ testCase: Case) throws {
        let chain = try testCase.chain.map(pki.certificate)
        let crls = try testCase.crlFiles.flatMap(pki.crls)
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: chain, host: "valid.test", trustStore: try pki.trustStore(), crls: crls)
        try expect(evaluation, testCase)
        // The same lists carried by the policy give the same verdict.
        let carried = try SecurityPolicy(mode: .none, crls: crls).evaluate(
            servedChain: chain, host: "valid.test", trustStore: try pki.trustStore())
        try expect(carried, testCase)
    }

    func expect(_ evaluation: TrustEvaluation, _ testCase: Case) throws {
        guard let reason = testCase.reason else {
            #expect(evaluation.verdict == .trusted, "\(evaluation.failure?.message ?? "")")
            #expect(evaluation.allowsConnection)
            return
        }
        let failure = try #require(evaluation.failure, "accepted")
        #expect(!evaluation.allowsConnection)
        #expect(failure.reason.description == reason, "\(failure.message)")
        #expect(failure.depth == testCase.depth, "\(failure.message)")
        if let part = testCase.messagePart { #expect(failure.message.contains(part), "\(failure.message)") }
    }

    @Test("Without CRLs a revoked leaf is not checked (revocation is opt-in), and public_key pins still apply with CRLs")
    func optIn() throws {
        let chain = try ["revoked", "inter"].map(pki.certificate)
        let unchecked = try SecurityPolicy(mode: .none).evaluate(servedChain: chain, host: "valid.test", trustStore: try pki.trustStore())
        #expect(unchecked.verdict == .trusted)
        // A pin on the intermediate does not excuse a revoked leaf.
        let pinned = try SecurityPolicy(mode: .publicKey, pins: [try pki.certificate("inter").spkiPin], requiresBackupPin: false)
        let evaluation = try pinned.evaluate(
            servedChain: chain, host: "valid.test", trustStore: try pki.trustStore(), crls: try pki.crls("all"))
        #expect(evaluation.failure?.reason == .revoked)
        // Nor does allowing invalid certificates (only anchors and dates are excused).
        let lenient = try SecurityPolicy(
            mode: .publicKey, pins: [try pki.certificate("inter").spkiPin], allowInvalidCertificates: true, requiresBackupPin: false,
            crls: try pki.crls("all"))
        let lenientEvaluation = try lenient.evaluate(servedChain: chain, host: "valid.test", trustStore: try pki.trustStore())
        #expect(lenientEvaluation.failure?.reason == .revoked)
    }

    @Test("A trusted intermediate used as the anchor (certificate pinning) needs no CRL from above it")
    func anchorNeedsNoCRL() throws {
        let policy = try SecurityPolicy(mode: .certificate, pinnedCertificates: [try pki.certificate("inter")], crls: try pki.crls("inter"))
        let good = try policy.evaluate(
            servedChain: try ["good", "inter"].map(pki.certificate), host: "valid.test", trustStore: try pki.trustStore())
        #expect(good.verdict == .trusted, "\(good.failure?.message ?? "")")
        let revoked = try policy.evaluate(
            servedChain: try ["revoked", "inter"].map(pki.certificate), host: "valid.test", trustStore: try pki.trustStore())
        #expect(revoked.failure?.reason == .revoked)
    }

    @Test("A CA without a key usage extension signs CRLs (RFC 5280 §6.3.3 (f)): as the anchor, its CRL clears and revokes")
    func issuerWithoutKeyUsage() throws {
        let store = try TrustStore(caFile: pki.file("nokuroot.pem"))
        for profile in VerificationProfile.all {
            let policy = try SecurityPolicy(mode: .none, profile: ProfileSelection(profile), crls: try pki.crls("nokuroot"))
            let good = try policy.evaluate(servedChain: [try pki.certificate("undernokuroot")], host: "valid.test", trustStore: store)
            #expect(good.verdict == .trusted, "\(profile): \(good.failure?.message ?? "")")
            let revoked = try policy.evaluate(
                servedChain: [try pki.certificate("revokedundernokuroot")], host: "valid.test", trustStore: store)
            #expect(revoked.failure?.reason == .revoked, "\(profile): \(revoked.failure?.message ?? "trusted")")
            // Its CRL is the one that decides: without it the leaf's status is unknown.
            let withoutItsCRL = try SecurityPolicy(mode: .none, profile: ProfileSelection(profile), crls: try pki.crls("root")).evaluate(
                servedChain: [try pki.certificate("undernokuroot")], host: "valid.test", trustStore: store)
            #expect(withoutItsCRL.failure?.reason == .crlMissing, "\(profile): \(withoutItsCRL.failure?.message ?? "trusted")")
        }
    }

    @Test("Combined policies unite their CRLs and keep the strictest revocation mode")
    func combination() throws {
        let crlPolicy = try SecurityPolicy(mode: .none, crls: try pki.crls("all"))
        let staplePolicy = try SecurityPolicy(mode: .none, revocation: .requireStapled)
        let set = HostPolicySet([
            HostPolicy(patterns: [try HostPattern(parsing: "valid.test")], policy: crlPolicy),
            HostPolicy(patterns: [try HostPattern(parsing: "valid.test")], policy: staplePolicy),
        ])
        let combined = try #require(set.resolution(for: "valid.test")?.policy)
        #expect(combined.crls == crlPolicy.crls)
        #expect(combined.revocation == .requireStapled)
        let evaluation = try combined.evaluate(
            servedChain: try ["revoked", "inter"].map(pki.certificate), host: "valid.test", trustStore: try pki.trustStore())
        #expect(evaluation.failure?.reason == .revoked)
    }

    @Test(
        """
        CRL files: PEM bundles and DER load; a file that is no CRL, a CRL without nextUpdate (OpenSSL would never find it \
        stale) or without CRLNumber (RFC 5280 §5.2.3), fails naming it
        """
    )
    func loading() throws {
        #expect(try pki.crls("all").count == 4)
        #expect(try pki.crls("inter.der").count == 1)
        #expect(try pki.crls("inter.der") == pki.crls("inter"))
        for (file, part) in [
            ("good.pem", "no certificate revocation list found"),
            ("good.ocsp", "not a PEM file, nor a DER certificate revocation list"),
            ("missing.crl", "cannot open"),
            ("inter-nonext.crl", "X509 CRL block 1 (CRL of CN=Revocation Test Intermediate) has no nextUpdate: RFC 5280 requires one"),
            ("inter-nonext.der.crl", "(CRL of CN=Revocation Test Intermediate) has no nextUpdate"),
            ("inter-nonumber.crl", "X509 CRL block 1 (CRL of CN=Revocation Test Intermediate) has no CRLNumber extension: RFC 5280"),
            ("inter-nonumber.der.crl", "(CRL of CN=Revocation Test Intermediate) has no CRLNumber extension"),
        ] {
            let path = pki.file(file)
            #expect {
                _ = try CertificateRevocationList.lists(contentsOf: path)
            } throws: { error in
                "\(error)".contains(path) && "\(error)".contains(part)
            }
        }
    }

    @Test(
        """
        A staple outside its validity window (an old 'good' replayed after its nextUpdate, or one dated ahead) is refused under \
        stapled and under must-staple
        """
    )
    func stapleValidity() throws {
        let response = Array(try Data(contentsOf: URL(fileURLWithPath: pki.file("good.ocsp"))))
        let chain = try ["good", "inter"].map(pki.certificate)
        for (offset, part) in [(2 * 86_400.0, "it expired at"), (-86_400.0, "it is not valid before")] {
            let check = StapledOCSPCheck(
                response: response, mode: .stapled, chain: chain, host: "valid.test", now: Date().addingTimeInterval(offset))
            #expect(check.failure?.reason == .ocspStapleInvalid, "\(check.failure?.message ?? "accepted")")
            #expect(check.failure?.message.contains(part) == true, "\(check.failure?.message ?? "")")
            #expect(check.staple?.status == .good)
            // Under `none` the staple is only read, not judged.
            let unjudged = StapledOCSPCheck(
                response: response, mode: .none, chain: chain, host: "valid.test", now: Date().addingTimeInterval(offset))
            #expect(unjudged.failure == nil)
        }
        let current = StapledOCSPCheck(response: response, mode: .requireStapled, chain: chain, host: "valid.test", now: Date())
        #expect(current.failure == nil, "\(current.failure?.message ?? "")")
        #expect(try pki.certificate("muststaple").requiresStapledOCSP)
        #expect(try !pki.certificate("good").requiresStapledOCSP)
    }
}
