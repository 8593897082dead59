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
    ///   - profile: the rules the verified path must meet, instead of the policy's ``profile``.
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
        if let profile { policy.profile = profile }
        if let maximumDepth {
            guard maximumDepth >= 1 else {
                throw SecurityError(.invalidInput, "a maximum chain depth must be at least 1 (got \(maximumDepth))")
            }
            policy.maximumChainDepth = maximumDepth
        }
        var evaluator = Evaluator(
            policy: policy, served: servedChain, host: host, trustStore: trustStore, time: verificationTime,
            crls: self.crls + crls)
        let (verdict, allows) = try evaluator.run(now: now)
        return TrustEvaluation(
            verdict: verdict, allowsConnection: allows, host: host, port: port, date: now, policy: policy,
            servedChain: servedChain, verifiedChain: evaluator.verifiedChain)
    }
}

/// The steps of one evaluation; keeps the last chain OpenSSL built for the result.
private struct Evaluator {
    let policy: SecurityPolicy
    let served: [Certificate]
    let host: String
    let trustStore: TrustStore
    let time: Date?
    let crls: [CertificateRevocationList]
    var verifiedChain: [Certificate] = []

    mutating func run(now: Date) throws -> (TrustEvaluation.Verdict, Bool) {
        guard !served.isEmpty else {
            let failure = TrustFailure(
                reason: .chainInvalid, verifyError: nil, depth: nil, message: "\(host): the server sent no certificate",
                expectedPins: policy.sortedPins, seenPins: [])
            return (.rejected(failure), false)
        }
        switch policy.mode {
        case .none:
            // Only this combination accepts anything; SecurityPolicy refuses it with validatesDomainName.
            if policy.allowInvalidCertificates && !policy.validatesDomainName {
                _ = try verifyWithTrustStore(.untrustedAnchor)  // for the verified chain in the result
                return (.trusted, true)
            }
            let verification = try verifyWithTrustStore(.strict)
            if let failure = chainFailure(verification) { return (.rejected(failure), false) }
            return (.trusted, true)
        case .publicKey, .certificate:
            if !policy.pinsApply(at: now) {
                // Expired pins leave the host unpinned (TrustKit), and an unpinned chain that need not be
                // valid would be anyone's: the trust store decides, whatever allowInvalidCertificates says.
                let verification = try verifyWithTrustStore(.strict)
                if let failure = chainFailure(verification) { return (.rejected(failure), false) }
                let failure = pinFailure(.pinsExpired, "\(host): pins expired at \(policy.expires.map { $0.formatted(.iso8601) } ?? "?"), not checked")
                return (.rejected(failure), true)
            }
            return policy.mode == .publicKey ? try publicKeyPinning() : try certificatePinning()
        }
    }

    /// `public_key`: validate against the trust store (only the anchor and dates excused when invalid
    /// certificates are allowed), then some certificate of the verified chain must have a pinned key.
    /// Report-only lets a pin failure through only on a chain the trust store accepts as it is.
    private mutating func publicKeyPinning() throws -> (TrustEvaluation.Verdict, Bool) {
        let relaxed = policy.allowInvalidCertificates && policy.enforce
        let verification = try verifyWithTrustStore(relaxed ? .untrustedAnchor : .strict)
        if let failure = chainFailure(verification) { return (.rejected(failure), false) }
        if verification.chain.contains(where: { policy.pins.contains($0.spkiPin) }) { return (.trusted, true) }
        return (.rejected(pinFailure(.pinMismatch, nil)), !policy.enforce)
    }

    /// `certificate`: the pinned certificates are the only anchors (a pinned intermediate or leaf suffices), the
    /// chain must validate against them, and a pinned certificate must be in the verified chain.
    private mutating func certificatePinning() throws -> (TrustEvaluation.Verdict, Bool) {
        let anchors = try TrustStore(certificates: policy.pinnedCertificates)
        let verification = try ChainVerification(
            served: served, store: anchors.store, host: policy.validatesDomainName ? host : nil, time: time,
            partialChain: true, leniency: .strict, profile: policy.profile,
            maximumDepth: policy.maximumChainDepth, crls: crls)
        verifiedChain = verification.chain
        let anchored = verification.chain.contains { policy.pinnedCertificates.contains($0) }
        if verification.verified && anchored { return (.trusted, true) }
        if verification.verified || ChainVerification.isMissingAnchorError(verification.error) {
            let failure = pinFailure(.pinMismatch, nil)
            guard !policy.enforce else { return (.rejected(failure), false) }
            // Report-only: the connection proceeds if the chain is good by the ordinary trust store.
            let fallback = try verifyWithTrustStore(.strict)
            if let chainFailure = chainFailure(fallback) { return (.rejected(chainFailure), false) }
            return (.rejected(failure), true)
        }
        return (.rejected(chainFailure(verification) ?? pinFailure(.pinMismatch, nil)), false)
    }

    /// Every certificate of the store is an anchor, a trusted intermediate too (partial chains, as Go and
    /// rustls-webpki): OpenSSL stops at the first trusted issuer, so the path is the shortest the store allows.
    private mutating func verifyWithTrustStore(_ leniency: ChainVerification.Leniency) throws -> ChainVerification {
        let verification = try ChainVerification(
            served: served, store: trustStore.store, host: policy.validatesDomainName ? host : nil, time: time,
            partialChain: true, leniency: leniency, profile: policy.profile,
            maximumDepth: policy.maximumChainDepth, crls: crls)
        verifiedChain = verification.chain
        return verification
    }

    /// The failure a verification reports, or `nil` when it passed (with chain errors ignored if allowed).
    private func chainFailure(_ verification: ChainVerification) -> TrustFailure? {
        verification.failure(host: host, expectedPins: policy.sortedPins)
    }

    /// A pin failure in OkHttp's shape: each verified certificate's pin and subject, then the pins expected.
    private func pinFailure(_ reason: TrustFailure.Reason, _ summary: String?) -> TrustFailure {
        var lines = [summary ?? "\(host): certificate pinning failure!", "  Peer certificate chain:"]
        lines += verifiedChain.map { "    \($0.spkiPin): \($0.subject)" }
        lines.append("  Pinned certificates for \(policy.notedHostname ?? host):")
        lines += policy.sortedPins.map { "    \($0)" }
        return TrustFailure(
            reason: reason, verifyError: nil, depth: nil, message: lines.joined(separator: "\n"),
            expectedPins: policy.sortedPins, seenPins: verifiedChain.map(\.spkiPin))
    }
}
