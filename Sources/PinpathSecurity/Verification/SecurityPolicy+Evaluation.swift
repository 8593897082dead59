import FoundationEssentials

extension SecurityPolicy {
    /// Evaluates the chain a server sent, AFSecurityPolicy's rules on OpenSSL.
    ///
    /// Pins are matched only against the chain OpenSSL built from the leaf and whose every link verified (each
    /// certificate signed by the next one's key), never against the extra certificates as sent: a rogue leaf
    /// with the pinned certificate appended fails (CVE-2016-2402), and so does a leaf that only names the
    /// pinned certificate as its issuer, even when invalid certificates are allowed.
    /// - Parameters:
    ///   - servedChain: the leaf first, then whatever else the server sent.
    ///   - host: the host name or IP address connected to, checked when ``validatesDomainName``.
    ///   - port: the port, for the report.
    ///   - trustStore: the anchors for modes `none` and `public_key` (and for report-only certificate pins).
    ///   - verificationTime: verify as of this time instead of now (auditing old chains).
    ///   - now: the clock for pin expiration and the report's date.
    ///   - profile: the rules every verified path must meet, instead of the policy's ``profile`` (which is
    ///     ``ProfileSelection/auto`` unless the policy forces one); `nil` keeps the policy's.
    ///   - maximumDepth: the most certificates a path may have (anchor included), instead of the policy's
    ///     ``maximumChainDepth``.
    ///   - crls: revocation lists to check the chain with, besides the policy's own ``crls``.
    /// - Returns: the verdict with the served and verified chains; "not trusted" is a verdict, not an error.
    ///   Its ``TrustEvaluation/policy`` is the policy applied, overrides included.
    /// - Throws: ``SecurityError`` only when the evaluation cannot run (OpenSSL failure, unusable host text,
    ///   a maximum depth below 1).
    public func evaluate(
        servedChain: [Certificate], host: String, port: Int = 443, trustStore: TrustStore,
        verificationTime: Date? = nil, now: Date = Date(), profile: VerificationProfile? = nil, maximumDepth: Int? = nil,
        crls: [CertificateRevocationList] = []
    ) throws -> TrustEvaluation {
        var policy = self
        if let profile { policy.profile = ProfileSelection(profile) }
        if let maximumDepth {
            guard maximumDepth >= 1 else {
                throw SecurityError(.invalidInput, "a maximum chain depth must be at least 1 (got \(maximumDepth))")
            }
            policy.maximumChainDepth = maximumDepth
        }
        var context = EvaluationContext(
            policy: policy, served: servedChain, host: host, trustStore: trustStore, verificationTime: verificationTime,
            now: now, crls: self.crls + crls)
        var verdict = TrustEvaluation.Verdict.trusted
        for rule in TrustRules.ordered {
            if case .failsToMeetRule(let failure) = try rule.evaluate(&context) {
                verdict = .rejected(failure)
                break
            }
        }
        return TrustEvaluation(
            verdict: verdict, allowsConnection: policy.allowsConnection(after: verdict), host: host, port: port,
            date: now, policy: policy, servedChain: servedChain, verifiedChain: context.verifiedChain,
            chainIsAnchoredForHost: context.chainIsAnchoredForHost, appliedProfile: context.appliedProfile)
    }

    /// Whether a connection may proceed on `verdict`: trusted, or a failure the policy only reports (pins that
    /// expired, a pin mismatch under report-only). The rules before such a failure passed, so the chain and
    /// the name are valid: ``PinnedCertificateInChain`` checks the trust store before it reports a mismatch.
    private func allowsConnection(after verdict: TrustEvaluation.Verdict) -> Bool {
        guard case .rejected(let failure) = verdict else { return true }
        return failure.reason == .pinsExpired || (failure.reason == .pinMismatch && !enforce)
    }
}
