/// `webpki.san_not_critical`: a leaf with a non-empty subject carries a non-critical subject alternative name
/// extension (Baseline Requirements §7.1.2.7.12: critical only when the subject is empty).
struct SubjectAlternativeNameNotCritical: ProfileRule {
    let name = "webpki.san_not_critical"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard let san = path.leafSubjectAlternativeNames, san.critical, !path.leaf.hasEmptySubject else {
            return .meetsRule
        }
        return fails(path, depth: 0, "the subject alternative name is critical although the subject is not empty")
    }
}
