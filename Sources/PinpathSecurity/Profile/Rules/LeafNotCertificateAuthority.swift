/// The leaf is not a CA: no `cA: TRUE` (BR 7.1.2.7.8). RFC 5280 allows a CA certificate as the leaf, and
/// OpenSSL accepts it. A leaf with keyCertSign but `cA: FALSE` breaks RFC 5280 itself: `X509_V_FLAG_X509_STRICT`
/// refuses it in both profiles.
struct LeafNotCertificateAuthority: ProfileRule {
    let name = "webpki.leaf_not_ca"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard !path.leafIsItsOwnIssuer, path.leaf.isCertificateAuthority else { return .meetsRule }
        return fails(path, depth: 0, "the leaf is a CA certificate (basic constraints cA: TRUE)")
    }
}
