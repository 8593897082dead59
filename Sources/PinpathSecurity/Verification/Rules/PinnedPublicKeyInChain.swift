/// In `public_key` mode, some certificate of the verified chain has a pinned SubjectPublicKeyInfo. Pins are
/// matched only against the chain OpenSSL built and linked by signatures, never against the certificates as
/// sent (CVE-2016-2402).
struct PinnedPublicKeyInChain: VerifierRule {
    func evaluate(_ context: inout EvaluationContext) -> RuleResult<TrustFailure> {
        guard context.policy.mode == .publicKey, context.pinsApply else { return .meetsRule }
        let pins = context.policy.pins
        if context.verifiedChain.contains(where: { pins.contains($0.spkiPin) }) { return .meetsRule }
        return .failsToMeetRule(reason: context.pinFailure(.pinMismatch, nil))
    }
}
