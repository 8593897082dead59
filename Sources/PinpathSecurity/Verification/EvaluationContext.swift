import FoundationEssentials

/// One ``SecurityPolicy`` evaluation as its steps (``TrustRules``) see it: what is judged, and the last chain
/// OpenSSL verified, which the pin steps match against and the result reports.
struct EvaluationContext {
    /// The policy applied, overrides included.
    let policy: SecurityPolicy
    /// What the server sent, leaf first.
    let served: [Certificate]
    /// The host name or IP address connected to, as given.
    let host: String
    /// The anchors for modes `none` and `public_key` (and for report-only certificate pins).
    let trustStore: TrustStore
    /// Verify as of this time instead of now.
    let verificationTime: Date?
    /// The clock for pin expiration.
    let now: Date
    /// The policy's revocation lists and the caller's.
    let crls: [CertificateRevocationList]
    /// The most recent OpenSSL run, `nil` before the first.
    private(set) var lastVerification: ChainVerification?

    init(
        policy: SecurityPolicy, served: [Certificate], host: String, trustStore: TrustStore, verificationTime: Date?,
        now: Date, crls: [CertificateRevocationList]
    ) {
        self.policy = policy
        self.served = served
        self.host = host
        self.trustStore = trustStore
        self.verificationTime = verificationTime
        self.now = now
        self.crls = crls
    }

    /// The chain of the most recent OpenSSL run (empty before the first): the result's verified chain.
    var verifiedChain: [Certificate] { lastVerification?.chain ?? [] }

    /// Whether the most recent OpenSSL run's chain ends at an anchor, linked, for the host
    /// (``ChainVerification/reachesAnchorForHost``); false before the first.
    var chainIsAnchoredForHost: Bool { lastVerification?.reachesAnchorForHost ?? false }

    /// The profile the most recent OpenSSL run applied and why, `nil` before the first.
    var appliedProfile: AppliedProfile? { lastVerification?.appliedProfile }

    /// Whether the pins apply at ``now``: in a pinning mode, and not expired.
    var pinsApply: Bool { policy.mode != .none && policy.pinsApply(at: now) }

    /// Verifies the served chain against `anchors`, every certificate of which is an anchor, a trusted
    /// intermediate too (partial chains, as Go and rustls-webpki): OpenSSL stops at the first trusted issuer, so
    /// the path is the shortest the store allows; when it fails, other paths are tried
    /// (``ChainVerification/searchingPaths(from:_:)``), each held to the profile the policy's selection gives
    /// it (``ProfileSelection/verify(_:against:_:)``). The host is checked when the policy validates the domain name.
    mutating func verify(against anchors: TrustStore, _ leniency: ChainVerification.Leniency) throws -> ChainVerification {
        let verification = try ChainVerification.searchingPaths(from: served) { served in
            try policy.profile.verify(served, against: anchors) { profile in
                try ChainVerification(
                    served: served, store: anchors.store, host: policy.validatesDomainName ? host : nil, time: verificationTime,
                    partialChain: true, leniency: leniency, profile: profile,
                    maximumDepth: policy.maximumChainDepth, crls: crls)
            }
        }
        lastVerification = verification
        return verification
    }

    /// The failure a verification reports, or `nil` when it passed (with chain errors ignored if allowed).
    func chainFailure(_ verification: ChainVerification) -> TrustFailure? {
        verification.failure(host: host, expectedPins: policy.sortedPins)
    }

    /// A pin failure in OkHttp's shape: each verified certificate's pin and subject, then the pins expected.
    func pinFailure(_ reason: TrustFailure.Reason, _ summary: String?) -> TrustFailure {
        var lines = [summary ?? "\(host): certificate pinning failure!", "  Peer certificate chain:"]
        lines += verifiedChain.map { "    \($0.spkiPin): \($0.subject)" }
        lines.append("  Pinned certificates for \(policy.notedHostname ?? host):")
        lines += policy.sortedPins.map { "    \($0)" }
        return TrustFailure(
            reason: reason, verifyError: nil, depth: nil, message: lines.joined(separator: "\n"),
            expectedPins: policy.sortedPins, seenPins: verifiedChain.map(\.spkiPin))
    }
}
