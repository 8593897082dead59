/// Every certificate not self-signed names its issuer's key: an authority key identifier with a keyIdentifier
/// (RFC 5280 4.2.1.1). `X509_V_FLAG_X509_STRICT` checks only that the extension is there, and not on the last
/// certificate of the path; this also covers a trusted intermediate without one (a cross-signed anchor). An
/// anchor signed by its own key names no other key, whatever its issuer name says (x509-limbo's
/// `cve::cve-2024-0567` trusts such a root).
struct AuthorityKeyIdentifierPresent: ProfileRule {
    let name = "rfc5280.authority_key_identifier"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated() where !certificate.isSelfSigned {
            if path.isAnchor(depth) && certificate.isSignedByOwnKey { continue }
            guard certificate.version >= 2 else { continue }  // a v1 certificate has no extensions to carry it
            guard let identifier = certificate.authorityKeyIdentifier else {
                return fails(path, depth: depth, "no authority key identifier (the certificate is not self-signed)")
            }
            if !identifier.hasKeyIdentifier {
                return fails(path, depth: depth, "the authority key identifier has no keyIdentifier")
            }
        }
        return .meetsRule
    }
}
