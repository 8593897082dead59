/// The server sent at least one certificate: there is a leaf to verify.
struct ServedChainPresent: VerifierRule {
    func evaluate(_ context: inout EvaluationContext) -> RuleResult<TrustFailure> {
        guard context.served.isEmpty else { return .meetsRule }
        return .failsToMeetRule(
            reason: TrustFailure(
                reason: .chainInvalid, verifyError: nil, depth: nil,
                message: "\(context.host): the server sent no certificate", expectedPins: context.policy.sortedPins,
                seenPins: []))
    }
}
