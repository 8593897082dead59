/// The path holds at most the configured number of certificates, anchor included (`max_chain_depth`). OpenSSL
/// alone allows 100.
struct MaximumDepth: ProfileRule {
    let name = "rfc5280.maximum_depth"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard let limit = path.maximumDepth, path.chain.count > limit else { return .meetsRule }
        return fails(
            path, depth: max(limit, 0), "the path has \(path.chain.count) certificates, more than the maximum of \(limit)")
    }
}
