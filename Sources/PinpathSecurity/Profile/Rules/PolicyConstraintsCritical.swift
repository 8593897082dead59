import COpenSSL

/// A policy constraints extension is marked critical (RFC 5280 4.2.1.11). What it requires
/// (requireExplicitPolicy, inhibitPolicyMapping) OpenSSL enforces: ChainVerification turns its policy check on
/// with anyPolicy as the initial set. OpenSSL alone ignores policy constraints and their criticality.
struct PolicyConstraintsCritical: ProfileRule {
    let name = "rfc5280.policy_constraints_critical"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated()
        where certificate.hasExtension(NID_policy_constraints) && !certificate.isCriticalExtension(NID_policy_constraints) {
            return fails(path, depth: depth, "the policy constraints extension is not marked critical")
        }
        return .meetsRule
    }
}
