/// `rfc5280.name_constraints_critical`: name constraints are marked critical (RFC 5280 §4.2.1.10: "Conforming
/// CAs MUST mark this extension as critical"). Only the `rfc5280` profile: the Baseline Requirements
/// (§7.1.2.5.2) allow a non-critical extension for legacy clients, so `webpki` accepts it.
struct NameConstraintsCritical: ProfileRule {
    let name = "rfc5280.name_constraints_critical"
    let profiles: Set<VerificationProfile> = [.rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated().dropFirst() {
            if let constraints = certificate.nameConstraintsExtension, !constraints.critical {
                return fails(path, depth: depth, "the name constraints extension is not critical")
            }
        }
        return .meetsRule
    }
}
