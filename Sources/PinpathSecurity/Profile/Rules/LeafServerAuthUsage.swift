import COpenSSL

/// The leaf says it is for TLS servers: an extended key usage extension, not critical, holding serverAuth and
/// no purpose the Baseline Requirements forbid beside it (anyExtendedKeyUsage, code signing, e-mail protection,
/// time stamping, OCSP signing, Certificate Transparency precertificate signing; BR 7.1.2.7.10). OpenSSL alone accepts
/// a leaf without the extension, and one
/// whose extension also holds those purposes; it refuses one without serverAuth in both profiles.
struct LeafServerAuthUsage: ProfileRule {
    let name = "webpki.leaf_eku_server_auth"
    let profiles: Set<VerificationProfile> = [.webpki]

    private static let forbidden: [(bit: Int32, name: String)] = [
        (XKU_ANYEKU, "anyExtendedKeyUsage"), (XKU_CODE_SIGN, "codeSigning"), (XKU_SMIME, "emailProtection"),
        (XKU_TIMESTAMP, "timeStamping"), (XKU_OCSP_SIGN, "OCSPSigning"),
    ]

    /// 1.3.6.1.4.1.11129.2.4.4, DER-encoded.
    private static let precertificateSigning: [UInt8] = [0x06, 0x0A, 0x2B, 0x06, 0x01, 0x04, 0x01, 0xD6, 0x79, 0x02, 0x04, 0x04]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard !path.leafIsItsOwnIssuer else { return .meetsRule }
        guard let usage = path.leaf.extendedKeyUsage else {
            return fails(path, depth: 0, "the leaf has no extended key usage extension (serverAuth is required)")
        }
        if usage & UInt32(XKU_SSL_SERVER) == 0 {
            return fails(path, depth: 0, "the leaf's extended key usage does not include serverAuth")
        }
        if let purpose = Self.forbidden.first(where: { usage & UInt32($0.bit) != 0 }) {
            return fails(path, depth: 0, "the leaf's extended key usage includes \(purpose.name) beside serverAuth")
        }
        if path.leaf.extendedKeyUsageLists(encodedOID: Self.precertificateSigning) {
            return fails(path, depth: 0, "the leaf's extended key usage includes precertificate signing (RFC 6962)")
        }
        if path.leaf.isCriticalExtension(NID_ext_key_usage) {
            return fails(path, depth: 0, "the leaf's extended key usage extension is marked critical")
        }
        return .meetsRule
    }
}
