/// A rule of a ``VerificationProfile``: a ``VerifierRule`` on the path OpenSSL verified, which fails with the
/// certificate that breaks it.
protocol ProfileRule: VerifierRule where Subject == VerifiedPath, Reason == ProfileViolation {
    /// The rule's name, as errors and `audit` show it (`webpki.leaf_eku_server_auth`).
    var name: String { get }
    /// The profiles that apply it.
    var profiles: Set<VerificationProfile> { get }
}

extension ProfileRule {
    /// A failure of the certificate at `depth`, with this rule's name.
    func fails(_ path: VerifiedPath, depth: Int, _ message: String) -> RuleResult<ProfileViolation> {
        .failsToMeetRule(
            reason: ProfileViolation(rule: name, depth: depth, subject: path.chain[depth].subject, message: message))
    }
}
