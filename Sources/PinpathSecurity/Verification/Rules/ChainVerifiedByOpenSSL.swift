/// The served chain verifies in one OpenSSL run (``ChainVerification``): path building, signatures, dates,
/// constraints, the host name (``HostNameCheck``), the profile's rules (``VerificationProfile``) and, when
/// CRLs are given, revocation. Which anchors and which leniency depend on the policy:
/// - `certificate` mode with pins that apply: the pinned certificates are the only anchors. A chain they do
///   not anchor is left to ``PinnedCertificateInChain``, which reports it as a pin mismatch.
/// - `none` mode accepting any certificate (invalid certificates allowed, no host check): the run only gives
///   the verified chain for the result.
/// - `public_key` mode allowing invalid certificates, with pins that apply and are enforced: only the anchor
///   and the dates are excused.
/// - otherwise, including expired pins (an unpinned chain that need not be valid would be anyone's) and
///   report-only pins (they let a pin failure through only on a chain the trust store accepts): strict.
struct ChainVerifiedByOpenSSL: VerifierRule {
    func evaluate(_ context: inout EvaluationContext) throws -> RuleResult<TrustFailure> {
        let policy = context.policy
        if policy.mode == .certificate && context.pinsApply {
            let verification = try context.verify(against: TrustStore.pinned(policy.pinnedCertificates), .strict)
            if verification.verified || ChainVerification.isMissingAnchorError(verification.error) { return .meetsRule }
            return context.chainFailure(verification).map { .failsToMeetRule(reason: $0) } ?? .meetsRule
        }
        if policy.mode == .none && policy.allowInvalidCertificates && !policy.validatesDomainName {
            _ = try context.verify(against: context.trustStore, .untrustedAnchor)
            return .meetsRule
        }
        let excusesAnchor = policy.mode == .publicKey && context.pinsApply && policy.allowInvalidCertificates && policy.enforce
        let verification = try context.verify(against: context.trustStore, excusesAnchor ? .untrustedAnchor : .strict)
        return context.chainFailure(verification).map { .failsToMeetRule(reason: $0) } ?? .meetsRule
    }
}
