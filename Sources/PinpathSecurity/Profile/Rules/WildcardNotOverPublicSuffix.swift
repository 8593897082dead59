/// `webpki.wildcard_public_suffix`: no wildcard dNSName of the leaf spans a public suffix (`*.com`,
/// `*.co.uk`): the Baseline Requirements (§3.2.2.6) forbid issuing one, and a certificate that has one
/// speaks for every domain registered under it. The suffixes are the ICANN section of Debian's public
/// suffix list (``PublicSuffixList``); without the list, a wildcard is refused rather than waved through.
/// OpenSSL refuses only a wildcard over a single label (`*.com`).
struct WildcardNotOverPublicSuffix: ProfileRule {
    let name = "webpki.wildcard_public_suffix"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for case .dns(let bytes) in path.leafSubjectAlternativeNames?.value ?? [] {
            guard bytes.starts(with: Array("*.".utf8)) else { continue }
            let domain = String(decoding: bytes.dropFirst(2), as: UTF8.self)
            switch PublicSuffixList.classify(domain) {
            case .notPublicSuffix:
                continue
            case .publicSuffix:
                return fails(
                    path, depth: 0,
                    "the wildcard \(DNSNameSyntax.quoted(bytes)) covers the public suffix \(DNSNameSyntax.quoted(Array(domain.utf8)))")
            case .unavailable(let reason):
                return fails(path, depth: 0, "the wildcard \(DNSNameSyntax.quoted(bytes)) cannot be checked: \(reason)")
            }
        }
        return .meetsRule
    }
}
