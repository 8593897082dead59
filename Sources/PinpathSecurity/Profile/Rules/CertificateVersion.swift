/// Every certificate but the trust anchor is X.509 v3 (BR 7.1.1). RFC 5280 allows a v1 or v2 leaf, and OpenSSL
/// accepts one; a v1 intermediate is no CA to OpenSSL (it has no basic constraints). A v1 root in the store
/// stays an anchor: pinpath excuses OpenSSL's strict refusal of it.
struct CertificateVersion: ProfileRule {
    let name = "webpki.certificate_version"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated() where !path.isAnchor(depth) && certificate.version != 2 {
            return fails(path, depth: depth, "X.509 v\(certificate.version + 1) certificate (v3 is required)")
        }
        return .meetsRule
    }
}
