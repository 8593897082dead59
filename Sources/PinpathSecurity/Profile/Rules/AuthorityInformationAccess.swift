/// An authority information access extension decodes and holds at least one access description (RFC 5280
/// 4.2.2.1: `SIZE (1..MAX)`; BR 7.1.2.7.7). OpenSSL alone ignores a malformed one (it reads it only to fetch
/// issuers) and refuses a critical one as an unhandled critical extension.
struct AuthorityInformationAccess: ProfileRule {
    let name = "rfc5280.authority_information_access"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated() {
            switch certificate.authorityInformationAccessCount {
            case .none, .some(.some(1...)): continue
            case .some(.none): return fails(path, depth: depth, "malformed authority information access extension")
            case .some(.some): return fails(path, depth: depth, "empty authority information access extension")
            }
        }
        return .meetsRule
    }
}
