/// In `certificate` mode, the chain verified against the pinned certificates (``ChainVerifiedByOpenSSL``)
/// and a pinned certificate is in it: a pinned intermediate or leaf suffices. Report-only pins let a mismatch
/// through only on a chain the ordinary trust store accepts, which this rule then verifies.
struct PinnedCertificateInChain: VerifierRule {
    func evaluate(_ context: inout EvaluationContext) throws -> RuleResult<TrustFailure> {
        let policy = context.policy
        guard policy.mode == .certificate, context.pinsApply else { return .meetsRule }
        let anchored = context.verifiedChain.contains { policy.pinnedCertificates.contains($0) }
        if context.lastVerification?.verified == true && anchored { return .meetsRule }
        let mismatch = context.pinFailure(.pinMismatch, nil)
        guard !policy.enforce else { return .failsToMeetRule(reason: mismatch) }
        let fallback = try context.verify(against: context.trustStore, .strict)
        return .failsToMeetRule(reason: context.chainFailure(fallback) ?? mismatch)
    }
}
