/// `webpki.san_required`: the leaf names its hosts in a subject alternative name extension (Baseline
/// Requirements §7.1.2.7.12); the subject's commonName is never used as a host name (browsers, Go ≥ 1.15,
/// rustls-webpki). The `rfc5280` profile keeps OpenSSL's fallback to the commonName of a leaf without a DNS
/// SAN, which RFC 6125 §6.4.4 permits.
struct SubjectAlternativeNameRequired: ProfileRule {
    let name = "webpki.san_required"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard path.leafSubjectAlternativeNames == nil else { return .meetsRule }
        return fails(
            path, depth: 0,
            "the leaf has no subject alternative name; its subject commonName is not a host name")
    }
}
