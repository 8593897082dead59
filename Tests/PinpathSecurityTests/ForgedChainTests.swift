import COpenSSL
import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// Issue 11, rules 1 and 2, on the evaluation itself: a chain whose links are not signatures never satisfies
/// a pin, whatever `allowInvalidCertificates` says; expired or report-only pins never turn allowing invalid
/// certificates into accepting any certificate.
@Suite("Forged chains and lenient policies")
struct ForgedChainTests {
    /// One forgery: what the attacker serves (leaf first) and the genuine certificate it names, which is pinned.
    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        /// (forged PKI name or `pki:` + TestPKI name)
        var served: [String]
        var pinned: String
        /// The hosts to evaluate for: every name of the leaf.
        var hosts = ["127.0.0.1", "valid.test"]
        var testDescription: String { name }
    }

    static let attacks: [Attack] = [
        Attack(
            name: "forged leaf naming an untrusted pinned CA, then that CA", served: ["forged-private", "privateca"], pinned: "privateca"),
        Attack(
            name: "forged leaf naming the trusted pinned intermediate, then it", served: ["forged-inter", "pki:inter"],
            pinned: "pki:inter"),
        Attack(
            name: "forged leaf naming it, then the intermediate and its root", served: ["forged-inter", "pki:inter", "pki:root"],
            pinned: "pki:inter"),
        Attack(
            name: "forged leaf naming a self-signed pinned server, then that server", served: ["forged-self", "pinnedself"],
            pinned: "pinnedself"),
        Attack(
            name: "genuine leaf with a corrupted signature, then its intermediate", served: ["corrupted-ip", "pki:inter"],
            pinned: "pki:inter", hosts: ["127.0.0.1"]),
    ]

    static func certificate(_ name: String) throws -> Certificate {
        name.hasPrefix("pki:") ? try TestPKI.shared.certificate(String(name.dropFirst(4))) : try ForgedPKI.shared.certificate(name)
    }

    static func policy(_ mode: PinningMode, pinned: [Certificate], allowInvalid: Bool, expires: Date? = nil, now: Date = Date()) throws
        -> SecurityPolicy
    {
        try SecurityPolicy(
            mode: mode, pins: mode == .publicKey ? pinned.map(\.spkiPin) : [], pinnedCertificates: mode == .certificate ? pinned : [],
            allowInvalidCertificates: allowInvalid, expires: expires, requiresBackupPin: false, now: now)
    }

    @Test(
        """
        A leaf that only names the pinned certificate as its issuer is rejected as a broken chain, in both modes, invalid \
        certificates allowed or not
        """,
        arguments: attacks, [PinningMode.publicKey, .certificate])
    func forgedChain(_ attack: Attack, mode: PinningMode) throws {
        let pinned = try Self.certificate(attack.pinned)
        let served = try attack.served.map(Self.certificate)
        for allowInvalid in [true, false] {
            for host in attack.hosts {
                let evaluation = try Self.policy(mode, pinned: [pinned], allowInvalid: allowInvalid).evaluate(
                    servedChain: served, host: host, trustStore: try TestPKI.shared.trustStore())
                let failure = try #require(evaluation.failure, "\(attack.name), \(mode), allowInvalid \(allowInvalid): trusted")
                #expect(!evaluation.allowsConnection)
                #expect(failure.reason == .chainInvalid, "\(failure.message)")
                #expect(failure.verifyError == 7 && failure.depth == 0, "\(failure.message)")
                // The pinned certificate is not linked to the leaf, so it is not in the chain pins were matched against.
                #expect(evaluation.verifiedChain == [served[0]], "allowInvalid \(allowInvalid): \(evaluation.verifiedChain)")
                #expect(!failure.seenPins.contains(pinned.spkiPin))
            }
        }
    }

    @Test("The genuine cases still pass with invalid certificates allowed: a chain under an untrusted root, a self-signed pinned server")
    func genuineStillPasses() throws {
        let forged = ForgedPKI.shared
        let store = try TestPKI.shared.trustStore()
        let rows: [(served: [String], pinned: String, modes: [PinningMode])] = [
            (["privateleaf", "privateca"], "privateca", [.publicKey, .certificate]),
            (["privateleaf", "privateca"], "privateleaf", [.publicKey, .certificate]),
            (["privateleaf"], "privateleaf", [.publicKey, .certificate]),
            // A CA the server does not send can only be an anchor: certificate mode.
            (["privateleaf"], "privateca", [.certificate]),
            (["pinnedself"], "pinnedself", [.publicKey, .certificate]),
        ]
        for row in rows {
            let served = try row.served.map(forged.certificate)
            let pinned = try forged.certificate(row.pinned)
            for mode in row.modes {
                let evaluation = try Self.policy(mode, pinned: [pinned], allowInvalid: true).evaluate(
                    servedChain: served, host: "127.0.0.1", trustStore: store)
                #expect(evaluation.verdict == .trusted, "\(row), \(mode): \(evaluation.failure?.message ?? "")")
                #expect(evaluation.verifiedChain.contains(pinned))
                // Without allowing invalid certificates, public-key pinning needs the store to vouch as well.
                if mode == .publicKey {
                    let strict = try Self.policy(mode, pinned: [pinned], allowInvalid: false).evaluate(
                        servedChain: served, host: "127.0.0.1", trustStore: store)
                    #expect(strict.failure?.reason == .chainInvalid, "\(row)")
                }
            }
        }
    }

    /// OpenSSL never checks a self-signed top's own signature, and accepts this chain when the missing anchor is
    /// excused: the check after it must still reach that certificate.
    @Test("A served self-signed certificate whose own signature is broken is refused, invalid certificates allowed or not")
    func brokenSelfSignature() throws {
        let genuine = try ForgedPKI.shared.certificate("pinnedself")
        let served = [try ForgedPKI.shared.certificate("corrupted-self")]
        for mode in [PinningMode.publicKey, .certificate] {
            for allowInvalid in [true, false] {
                let evaluation = try Self.policy(mode, pinned: [genuine], allowInvalid: allowInvalid).evaluate(
                    servedChain: served, host: "127.0.0.1", trustStore: try TestPKI.shared.trustStore())
                let failure = try #require(evaluation.failure, "\(mode), allowInvalid \(allowInvalid): trusted")
                #expect(failure.reason == .chainInvalid, "\(failure.message)")
                #expect(failure.verifyError == X509_V_ERR_CERT_SIGNATURE_FAILURE && failure.depth == 0, "\(failure.message)")
            }
        }
    }

    @Test("Allowing invalid certificates excuses the anchor and dates, never a signature, a CA constraint, a weak key or the host")
    func excusedErrors() {
        let excused: [Int32] = [
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
            X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED,
            X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID,
        ]
        let refused: [Int32] = [
            X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE, X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY,
            X509_V_ERR_INVALID_CA, X509_V_ERR_KEYUSAGE_NO_CERTSIGN, X509_V_ERR_PATH_LENGTH_EXCEEDED, X509_V_ERR_INVALID_PURPOSE,
            X509_V_ERR_CA_KEY_TOO_SMALL, X509_V_ERR_CA_MD_TOO_WEAK, X509_V_ERR_EE_KEY_TOO_SMALL, X509_V_ERR_HOSTNAME_MISMATCH,
            X509_V_ERR_IP_ADDRESS_MISMATCH, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD, X509_V_ERR_CERT_REJECTED,
        ]
        for error in excused { #expect(ChainVerification.isExcusedWhenAllowingInvalid(error), "\(error)") }
        for error in refused { #expect(!ChainVerification.isExcusedWhenAllowingInvalid(error), "\(error)") }
    }

    @Test("A genuine leaf of the pinned CA used as an issuer is refused even with invalid certificates allowed (INVALID_CA is not excused)")
    func leafAsIssuer() throws {
        let forged = ForgedPKI.shared
        let served = try ["by-customer", "customer", "privateca"].map(forged.certificate)
        for mode in [PinningMode.publicKey, .certificate] {
            let evaluation = try Self.policy(mode, pinned: [try forged.certificate("privateca")], allowInvalid: true).evaluate(
                servedChain: served, host: "127.0.0.1", trustStore: try TestPKI.shared.trustStore())
            #expect(!evaluation.allowsConnection, "\(mode)")
            // OpenSSL's strict checks go leaf first: the forged leaf's missing authority key identifier comes
            // before `customer`'s INVALID_CA. Neither is excused.
            let refusal = evaluation.failure?.verifyError ?? 0
            #expect(
                [X509_V_ERR_INVALID_CA, X509_V_ERR_MISSING_AUTHORITY_KEY_IDENTIFIER].contains(refusal),
                "\(mode): \(evaluation.failure?.message ?? "trusted")")
            #expect(!ChainVerification.isExcusedWhenAllowingInvalid(refusal))
        }
    }

    // MARK: Rule 2

    @Test("Allowing invalid certificates with report-only or already expired pins is refused where the policy is built")
    func lenientCombinationsRefused() throws {
        let pin = try ForgedPKI.shared.certificate("pinnedself")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for mode in [PinningMode.publicKey, .certificate] {
            let pins = mode == .publicKey ? [pin.spkiPin] : []
            let certificates = mode == .certificate ? [pin] : []
            let refusals: [(String, () throws -> SecurityPolicy)] = [
                (
                    "enforce: false",
                    {
                        try SecurityPolicy(
                            mode: mode, pins: pins, pinnedCertificates: certificates, allowInvalidCertificates: true, enforce: false,
                            requiresBackupPin: false)
                    }
                ),
                (
                    "expired",
                    {
                        try SecurityPolicy(
                            mode: mode, pins: pins, pinnedCertificates: certificates, allowInvalidCertificates: true,
                            expires: now.addingTimeInterval(-86_400), requiresBackupPin: false, now: now)
                    }
                ),
                (
                    "expiring now",
                    {
                        try SecurityPolicy(
                            mode: mode, pins: pins, pinnedCertificates: certificates, allowInvalidCertificates: true, expires: now,
                            requiresBackupPin: false, now: now)
                    }
                ),
            ]
            for (name, make) in refusals {
                let error = #expect(throws: SecurityError.self, "\(mode), \(name)") { try make() }
                #expect(error?.code == .invalidPolicy, "\(mode), \(name)")
                #expect(error?.message.contains("would accept any certificate") == true, "\(error?.message ?? "")")
                #expect(error?.message.contains("allow_invalid_certificates: false") == true, "\(error?.message ?? "")")
            }
            // Each half alone is fine: expired pins without allow_invalid, report-only without it, allow_invalid
            // with pins that expire later.
            _ = try SecurityPolicy(
                mode: mode, pins: pins, pinnedCertificates: certificates, expires: now.addingTimeInterval(-86_400),
                requiresBackupPin: false, now: now)
            _ = try SecurityPolicy(mode: mode, pins: pins, pinnedCertificates: certificates, enforce: false, requiresBackupPin: false)
            _ = try SecurityPolicy(
                mode: mode, pins: pins, pinnedCertificates: certificates, allowInvalidCertificates: true,
                expires: now.addingTimeInterval(86_400), requiresBackupPin: false, now: now)
        }
    }

    @Test(
        "A policy that allows invalid certificates and expires while in use: after the date, the attacker's self-signed certificate fails")
    func expiresWhileRunning() throws {
        let forged = ForgedPKI.shared
        let built = Date(timeIntervalSince1970: 1_800_000_000)
        let expiry = built.addingTimeInterval(3600)
        let store = try TestPKI.shared.trustStore()
        for mode in [PinningMode.publicKey, .certificate] {
            let policy = try Self.policy(
                mode, pinned: [try forged.certificate("pinnedself")], allowInvalid: true, expires: expiry, now: built)
            let attacker = [try forged.certificate("attackerself")]
            let genuine = [try forged.certificate("pinnedself")]
            // Before the date the pin decides: the genuine self-signed server passes, the attacker does not.
            let before = try policy.evaluate(servedChain: genuine, host: "127.0.0.1", trustStore: store, now: built)
            #expect(before.verdict == .trusted, "\(mode): \(before.failure?.message ?? "")")
            let attackerBefore = try policy.evaluate(servedChain: attacker, host: "127.0.0.1", trustStore: store, now: built)
            #expect(!attackerBefore.allowsConnection, "\(mode)")
            // After it, nothing is pinned: the trust store decides, and it knows neither.
            for served in [attacker, genuine] {
                let after = try policy.evaluate(
                    servedChain: served, host: "127.0.0.1", trustStore: store, now: expiry.addingTimeInterval(1))
                #expect(!after.allowsConnection, "\(mode), \(served[0].subject) after expiry")
                #expect(
                    after.failure?.reason == .chainInvalid && after.failure?.verifyError == 18,
                    "\(mode): \(after.failure?.message ?? "trusted")")
            }
        }
    }

    @Test("Expired or report-only pins without allow_invalid: the attacker's self-signed certificate fails on the chain")
    func expiredAndReportOnlyCheckTheChain() throws {
        let forged = ForgedPKI.shared
        let store = try TestPKI.shared.trustStore()
        let attacker = [try forged.certificate("attackerself")]
        let pinned = [try forged.certificate("pinnedself")]
        for mode in [PinningMode.publicKey, .certificate] {
            let expired = try Self.policy(mode, pinned: pinned, allowInvalid: false, expires: Date(timeIntervalSince1970: 1_600_000_000))
            let reportOnly = try SecurityPolicy(
                mode: mode, pins: mode == .publicKey ? pinned.map(\.spkiPin) : [], pinnedCertificates: mode == .certificate ? pinned : [],
                enforce: false, requiresBackupPin: false)
            for policy in [expired, reportOnly] {
                let evaluation = try policy.evaluate(servedChain: attacker, host: "127.0.0.1", trustStore: store)
                #expect(!evaluation.allowsConnection, "\(mode), enforce \(policy.enforce)")
                #expect(evaluation.failure?.reason == .chainInvalid, "\(mode): \(evaluation.failure?.message ?? "trusted")")
            }
        }
    }
}
