/// A self-signed trust anchor (a root) carries no extended key usage extension (BR 7.1.2.1.2). A trusted
/// intermediate may: subordinate CAs must carry one. OpenSSL alone accepts a root whose extension includes
/// serverAuth (and refuses one without it, in both profiles).
struct RootWithoutExtendedKeyUsage: ProfileRule {
    let name = "webpki.root_without_eku"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        let top = path.chain.count - 1
        guard top > 0, path.isAnchor(top), path.chain[top].isSelfSigned, path.chain[top].extendedKeyUsage != nil
        else { return .meetsRule }
        return fails(path, depth: top, "the root carries an extended key usage extension")
    }
}
