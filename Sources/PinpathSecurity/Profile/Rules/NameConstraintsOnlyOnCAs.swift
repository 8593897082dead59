/// `rfc5280.name_constraints_only_on_cas`: the leaf carries no name constraints extension (RFC 5280
/// §4.2.1.10: "MUST be used only in a CA certificate"). OpenSSL never reads a leaf's constraints, so a leaf
/// that carries them claims a restriction nobody enforces.
struct NameConstraintsOnlyOnCAs: ProfileRule {
    let name = "rfc5280.name_constraints_only_on_cas"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard path.leaf.nameConstraintsExtension != nil else { return .meetsRule }
        return fails(path, depth: 0, "the leaf carries name constraints, which only CA certificates may")
    }
}
