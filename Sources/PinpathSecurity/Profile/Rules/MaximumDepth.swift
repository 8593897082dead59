/// The path holds at most the configured number of certificates, anchor included (`max_chain_depth`), not
/// counting self-issued intermediates: a CA's certificate for its own new key (a key rollover) is the same
/// logical CA, and RFC 5280 §6.1.4 (l) does not count it against a path length either. OpenSSL alone allows 100.
struct MaximumDepth: ProfileRule {
    let name = "rfc5280.maximum_depth"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard let limit = path.maximumDepth, path.chain.count > limit else { return .meetsRule }
        // The depth of each counted certificate: the leaf, the anchor, and every intermediate not self-issued.
        let counted = path.chain.indices.filter { depth in
            depth == 0 || depth == path.chain.count - 1 || !path.chain[depth].isSelfIssued
        }
        guard counted.count > limit else { return .meetsRule }
        let selfIssued = path.chain.count - counted.count
        let uncounted = selfIssued > 0 ? " (and \(selfIssued) self-issued, not counted)" : ""
        return fails(
            path, depth: counted[limit],
            "the path has \(counted.count) certificates\(uncounted), more than the maximum of \(limit)")
    }
}
