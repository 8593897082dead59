import FoundationEssentials

/// In a pinning mode, the pins have not expired (TrustKit `expirationDate`). Expired pins leave the host
/// unpinned: the failure is reported, and the connection proceeds on the chain the trust store accepted.
struct PinsNotExpired: VerifierRule {
    func evaluate(_ context: inout EvaluationContext) -> RuleResult<TrustFailure> {
        let policy = context.policy
        guard policy.mode != .none, !policy.pinsApply(at: context.now) else { return .meetsRule }
        let expiry = policy.expires.map { $0.formatted(.iso8601) } ?? "?"
        return .failsToMeetRule(reason: context.pinFailure(.pinsExpired, "\(context.host): pins expired at \(expiry), not checked"))
    }
}
