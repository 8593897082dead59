/// What one ``VerifierRule`` concluded (swift-certificates' `PolicyEvaluationResult`): met, or failed with a
/// reason that a report can show as it is.
enum RuleResult<Reason: Sendable>: Sendable {
    /// The subject satisfies the rule.
    case meetsRule
    /// The subject breaks the rule, for this reason.
    case failsToMeetRule(reason: Reason)
}
