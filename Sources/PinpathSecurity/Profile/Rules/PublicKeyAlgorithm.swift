import COpenSSL

/// Every key of the path, the anchor's included, is one the Baseline Requirements allow (BR 6.1.5, 7.1.3.1):
/// RSA of at least 2048 bits with a modulus length divisible by 8, or ECDSA on P-256, P-384 or P-521 (named
/// curves); Ed25519 too, as pinpath's own choice. No DSA, no other curve. OpenSSL alone (security level 2)
/// refuses only keys under 112 bits of strength (RSA < 2048, P-192) and, with its strict flag, explicit curve
/// parameters.
struct PublicKeyAlgorithm: ProfileRule {
    let name = "webpki.public_key"
    let profiles: Set<VerificationProfile> = [.webpki]

    private static let curves: Set<String> = ["prime256v1", "secp384r1", "secp521r1"]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated() {
            if let problem = Self.problem(certificate.publicKeyAlgorithm) {
                return fails(path, depth: depth, problem)
            }
        }
        return .meetsRule
    }

    private static func problem(_ key: (nid: Int32, bits: Int, curve: String?)?) -> String? {
        guard let key else { return "the public key cannot be decoded" }
        switch key.nid {
        case NID_rsaEncryption:
            if key.bits < 2048 { return "RSA key of \(key.bits) bits (at least 2048 are required)" }
            if key.bits % 8 != 0 { return "RSA modulus of \(key.bits) bits (its length must be a multiple of 8)" }
            return nil
        case NID_X9_62_id_ecPublicKey:
            guard let curve = key.curve else { return "EC key without a named curve" }
            return curves.contains(curve) ? nil : "EC key on \(curve) (only P-256, P-384 and P-521 are allowed)"
        case NID_ED25519:
            return nil
        case NID_dsa:
            return "DSA key (not allowed)"
        default:
            return "\(String(cString: OBJ_nid2sn(key.nid))) key (only RSA, ECDSA on P-256/P-384/P-521 and Ed25519 are allowed)"
        }
    }
}
