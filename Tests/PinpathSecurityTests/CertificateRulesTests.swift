import COpenSSL
import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// The certificate rules of the verification profile (issue 12), on chains generated with the openssl CLI
/// (``CertificateProfilePKI``): each case breaks one rule, or none, and is evaluated as the external harness
/// does it, `SecurityPolicy(mode: .none)` against `TrustStore(certificates:)` of the case's anchors.
@Suite("Certificate rules of the verification profile")
struct CertificateRulesTests {
    /// What a case must give under one profile.
    enum Expected: Sendable, Equatable, CustomStringConvertible {
        case accepted
        /// Rejected by this profile rule (the failure's `violation`).
        case rule(String)
        /// Rejected by OpenSSL itself, with this `X509_V_ERR` (strict flag, purpose, policy check…).
        case openSSL(Int32)

        var description: String {
            switch self {
            case .accepted: "accepted"
            case .rule(let name): "rule \(name)"
            case .openSSL(let code): "X509_V_ERR \(code)"
            }
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var webpki: Expected
        var rfc5280: Expected
        /// The host checked, or `nil` for none (`validatesDomainName` false).
        var host: String? = "example.com"
        var testDescription: String { "\(name): webpki \(webpki), rfc5280 \(rfc5280)" }

        init(_ name: String, _ both: Expected) { (self.name, webpki, rfc5280) = (name, both, both) }
        init(_ name: String, webpki: Expected, rfc5280: Expected, host: String? = "example.com") {
            (self.name, self.webpki, self.rfc5280, self.host) = (name, webpki, rfc5280, host)
        }
    }

    static let leafEKU = Expected.rule("webpki.leaf_eku_server_auth")
    static let publicKey = Expected.rule("webpki.public_key")

    static let cases: [Case] = [
        Case("valid", .accepted),
        // Extended key usage
        Case("leaf-no-eku", webpki: leafEKU, rfc5280: .accepted),
        Case("leaf-eku-server-any", webpki: leafEKU, rfc5280: .accepted),
        Case("leaf-eku-server-codesigning", webpki: leafEKU, rfc5280: .accepted),
        Case("leaf-eku-critical", webpki: leafEKU, rfc5280: .accepted),
        Case("leaf-eku-server-precert", webpki: leafEKU, rfc5280: .accepted),
        Case("leaf-eku-server-client", .accepted),
        Case("leaf-eku-client", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("leaf-eku-any", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("inter-eku-server", .accepted),
        Case("inter-eku-client", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("inter-eku-any", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("root-eku-server", webpki: .rule("webpki.root_without_eku"), rfc5280: .accepted),
        Case("root-eku-client", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("anchor-inter-with-eku", .accepted),
        // Basic constraints, key usage, path length
        Case("leaf-ca", webpki: .rule("webpki.leaf_not_ca"), rfc5280: .accepted),
        Case("leaf-keycertsign", .openSSL(X509_V_ERR_KU_KEY_CERT_SIGN_INVALID_FOR_NON_CA)),
        Case("leaf-no-bc", .accepted),
        Case("leaf-no-ku", .accepted),
        Case("inter-bc-noncritical", .openSSL(X509_V_ERR_CA_BCONS_NOT_CRITICAL)),
        Case("root-bc-noncritical", .openSSL(X509_V_ERR_CA_BCONS_NOT_CRITICAL)),
        Case("root-no-bc", .openSSL(X509_V_ERR_INVALID_CA)),
        Case("inter-no-ku", .openSSL(X509_V_ERR_CA_CERT_MISSING_KEY_USAGE)),
        Case("inter-ku-no-certsign", .openSSL(X509_V_ERR_INVALID_CA)),
        Case("root-ku-no-certsign", .openSSL(X509_V_ERR_INVALID_CA)),
        Case("pathlen-zero-ok", .accepted),
        Case("pathlen-exceeded", .openSSL(X509_V_ERR_PATH_LENGTH_EXCEEDED)),
        Case("four-certificates", .accepted),
        // RFC 5280 §6.1.1 (d): a trust anchor's extensions are input, not checked; a CA without key usage is refused
        // only as an intermediate (above).
        Case("root-no-ku", .accepted),
        // A CA certificate as the leaf: OpenSSL's TLS purpose check refuses its key usage (keyCertSign only);
        // RFC 5280 allows it, the Baseline Requirements do not; its pathLenConstraint counts for nothing (§4.2.1.9).
        Case("ca-as-leaf", webpki: .rule("webpki.leaf_not_ca"), rfc5280: .accepted),
        Case("pathlen-in-leaf", webpki: .rule("webpki.leaf_not_ca"), rfc5280: .accepted),
        Case("ca-as-leaf-eku-client", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("ca-as-leaf-nscert-client", .openSSL(X509_V_ERR_INVALID_PURPOSE)),
        Case("self-issued-intermediate", .accepted),
        // Key identifiers
        Case("leaf-no-ski", .accepted),
        Case("root-no-aki", .accepted),
        Case("leaf-no-aki", .openSSL(X509_V_ERR_MISSING_AUTHORITY_KEY_IDENTIFIER)),
        Case("inter-no-aki", .openSSL(X509_V_ERR_MISSING_AUTHORITY_KEY_IDENTIFIER)),
        Case("inter-no-ski", .openSSL(X509_V_ERR_MISSING_SUBJECT_KEY_IDENTIFIER)),
        Case("root-no-ski", .openSSL(X509_V_ERR_MISSING_SUBJECT_KEY_IDENTIFIER)),
        Case("root-aki-critical", .openSSL(X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION)),
        Case("root-ski-critical", .openSSL(X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION)),
        Case("anchor-inter-no-aki", .rule("rfc5280.authority_key_identifier")),
        Case("root-aki-no-keyid", webpki: .rule("webpki.authority_key_identifier_form"), rfc5280: .accepted),
        Case("root-aki-issuer", webpki: .rule("webpki.authority_key_identifier_form"), rfc5280: .accepted),
        Case("leaf-aki-issuer", webpki: .rule("webpki.authority_key_identifier_form"), rfc5280: .accepted),
        // OpenSSL takes a root whose AKI names another key for an intermediate; as an anchor it ends the path.
        Case("root-aki-mismatch", webpki: .rule("webpki.authority_key_identifier_form"), rfc5280: .accepted),
        // Keys
        Case("leaf-key-rsa3072", .accepted),
        Case("leaf-key-p256", .accepted),
        Case("leaf-key-p384", .accepted),
        Case("leaf-key-p521", .accepted),
        Case("leaf-key-ed25519", .accepted),
        Case("leaf-key-rsa2052", webpki: publicKey, rfc5280: .accepted),
        Case("leaf-key-p224", webpki: publicKey, rfc5280: .accepted),
        Case("leaf-key-dsa", webpki: publicKey, rfc5280: .accepted),
        Case("leaf-key-ed448", webpki: publicKey, rfc5280: .accepted),
        Case("root-key-dsa", webpki: publicKey, rfc5280: .accepted),
        Case("leaf-key-explicit", .openSSL(X509_V_ERR_EC_KEY_EXPLICIT_PARAMS)),
        // Serial numbers, versions
        Case("leaf-serial-20-octets", .accepted),
        Case("leaf-serial-21-octets", .rule("rfc5280.serial_number")),
        Case("leaf-serial-zero", .rule("rfc5280.serial_number")),
        Case("leaf-serial-negative", .rule("rfc5280.serial_number")),
        // A v1 leaf has no SAN: checked without a host name, so that only its version is at stake.
        Case("leaf-v1", webpki: .rule("webpki.certificate_version"), rfc5280: .accepted, host: nil),
        Case("inter-v1", .openSSL(X509_V_ERR_INVALID_CA)),
        Case("root-v1", .accepted),
        // Authority information access
        Case("leaf-aia", .accepted),
        Case("leaf-aia-malformed", .rule("rfc5280.authority_information_access")),
        Case("leaf-aia-empty", .rule("rfc5280.authority_information_access")),
        Case("leaf-aia-critical", .openSSL(X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION)),
        // Policy constraints
        Case("inter-pc-noncritical", .rule("rfc5280.policy_constraints_critical")),
        Case("inter-explicit-policy", .openSSL(X509_V_ERR_NO_EXPLICIT_POLICY)),
        Case("explicit-policy-met", .accepted),
        // Anchors: any certificate of the store, the shortest path
        Case("anchor-inter", .accepted),
        Case("anchor-inter-not-served", .accepted),
        Case("anchor-inter-root-served", .accepted),
        Case("anchor-shortest", .accepted),
        Case("root-eku-server-long", webpki: .rule("webpki.root_without_eku"), rfc5280: .accepted),
    ]

    static func evaluate(
        _ name: String, profile: VerificationProfile, maximumDepth: Int? = nil, host: String? = "example.com"
    ) throws -> TrustEvaluation {
        let pki = CertificateProfilePKI.shared
        let policy = try SecurityPolicy(
            mode: .none, validatesDomainName: host != nil, profile: ProfileSelection(profile), maximumChainDepth: maximumDepth)
        return try policy.evaluate(
            servedChain: try pki.served(name), host: host ?? "example.com", trustStore: try TrustStore(certificates: try pki.anchors(name)))
    }

    static func verdict(_ evaluation: TrustEvaluation) -> Expected {
        guard let failure = evaluation.failure else { return .accepted }
        if let violation = failure.violation { return .rule(violation.rule) }
        return .openSSL(failure.verifyError ?? -1)
    }

    @Test("Each case gives its verdict under each profile", arguments: cases)
    func verdicts(_ row: Case) throws {
        for (profile, expected) in [(VerificationProfile.webpki, row.webpki), (.rfc5280, row.rfc5280)] {
            let evaluation = try Self.evaluate(row.name, profile: profile, host: row.host)
            #expect(Self.verdict(evaluation) == expected, "\(profile): \(evaluation.failure?.message ?? "trusted")")
            #expect(evaluation.allowsConnection == (expected == .accepted), "\(profile)")
            guard case .rule(let rule) = expected, let failure = evaluation.failure else { continue }
            // The message names the rule and the certificate, and says when the lenient profile would accept.
            #expect(failure.reason == .chainInvalid)
            #expect(failure.message.contains("rule \(rule) at depth \(failure.violation?.depth ?? -1)"), "\(failure.message)")
            let lenient = row.rfc5280 == .accepted && profile == .webpki
            #expect(failure.message.hasSuffix("(a Baseline Requirements rule, not in rfc5280)") == lenient, "\(failure.message)")
        }
    }

    @Test("A rule names the certificate that breaks it: the leaf, the intermediate, the root")
    func depths() throws {
        for (name, depth, subject) in [
            ("leaf-serial-zero", 0, "CN=leaf-serial-zero-leaf"), ("inter-pc-noncritical", 1, "CN=inter-pc-noncritical-inter"),
            ("root-eku-server-long", 2, "CN=eku-root"),
        ] {
            let violation = try #require(try Self.evaluate(name, profile: .webpki).failure?.violation, "\(name)")
            #expect(violation.depth == depth && violation.subject == subject, "\(name): \(violation)")
        }
    }

    @Test("The maximum depth counts the certificates of the path, anchor included, self-issued intermediates excepted")
    func maximumDepth() throws {
        for profile in VerificationProfile.all {
            // The depth refused is the first certificate past the limit, counted as the rule counts.
            let depth = Expected.rule("rfc5280.maximum_depth")
            for (name, limit, expected, refusedAt) in [
                ("valid", 3, Expected.accepted, nil), ("valid", 2, depth, 2),
                ("four-certificates", 3, depth, 3), ("four-certificates", 4, .accepted, nil),
                // A trusted intermediate ends the path: two certificates.
                ("anchor-inter", 2, .accepted, nil),
                // A self-issued intermediate (depth 1) is not counted (RFC 5280 §6.1.4 (l)): four certificates,
                // three counted; past a limit of 2 is the root.
                ("self-issued-intermediate", 3, .accepted, nil), ("self-issued-intermediate", 2, depth, 3),
            ] as [(String, Int, Expected, Int?)] {
                let evaluation = try Self.evaluate(name, profile: profile, maximumDepth: limit)
                #expect(Self.verdict(evaluation) == expected, "\(profile) \(name) \(limit): \(evaluation.failure?.message ?? "trusted")")
                #expect(evaluation.failure?.violation?.depth == refusedAt, "\(profile) \(name) \(limit)")
            }
        }
        let counted = try Self.evaluate("self-issued-intermediate", profile: .rfc5280, maximumDepth: 2)
        #expect(
            counted.failure?.message.hasSuffix("the path has 3 certificates (and 1 self-issued, not counted), more than the maximum of 2")
                == true, "\(counted.failure?.message ?? "trusted")")
    }

    @Test("A trusted intermediate is an anchor, and the path stops at the first one (the shortest)")
    func anchors() throws {
        let pki = CertificateProfilePKI.shared
        for name in ["anchor-inter", "anchor-inter-not-served", "anchor-inter-root-served"] {
            let evaluation = try Self.evaluate(name, profile: .webpki)
            #expect(evaluation.verifiedChain.map(\.subject) == ["CN=leaf", "CN=inter"], "\(name)")
        }
        // The root above the trusted intermediate carries an EKU (webpki refuses it): the path never reaches it.
        let shortest = try Self.evaluate("anchor-shortest", profile: .webpki)
        #expect(shortest.verifiedChain == Array(try pki.served("anchor-shortest")), "\(shortest.verifiedChain)")
    }

    @Test("A pinned self-signed server certificate is its own issuer: the leaf rules of the Baseline Requirements do not apply")
    func selfSignedLeaf() throws {
        let pki = CertificateProfilePKI.shared
        // CA:TRUE, no EKU, an AKI naming issuer and serial: what `openssl req -x509` long made.
        let leaf = try #require(try Certificate.certificates(contentsOf: pki.file("self-server.pem")).first)
        for mode in [PinningMode.publicKey, .certificate] {
            let policy = try SecurityPolicy(
                mode: mode, pins: mode == .publicKey ? [leaf.spkiPin] : [], pinnedCertificates: mode == .certificate ? [leaf] : [],
                requiresBackupPin: false)
            let evaluation = try policy.evaluate(servedChain: [leaf], host: "example.com", trustStore: try TrustStore(certificates: [leaf]))
            #expect(evaluation.verdict == .trusted, "\(mode): \(evaluation.failure?.message ?? "")")
        }
        // A CA leaf issued by a CA is refused.
        let evaluation = try Self.evaluate("leaf-ca", profile: .webpki)
        #expect(Self.verdict(evaluation) == .rule("webpki.leaf_not_ca"), "\(evaluation.failure?.message ?? "trusted")")
    }
}
