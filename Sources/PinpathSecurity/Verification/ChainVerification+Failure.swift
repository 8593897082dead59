/// How a verification that did not pass is reported: a profile violation, a revocation, a wrong host or an
/// invalid chain.
extension ChainVerification {
    /// The failure to report for `host`, or `nil` when the verification passed (with chain errors ignored if
    /// that was asked for): a host mismatch or an invalid chain, with the pins of the chain built.
    /// A certificate outside its validity period (``validityLapse``) is named first, with what else was wrong
    /// after it, only in a chain that ``reachesAnchorForHost``: the service's own certificate lapsed. In any other
    /// chain the trust failure comes first (unknown issuer, self-signed, another host: what an interception
    /// looks like, whatever dates the attacker chose) and the lapse after it. A revocation stays first, as the
    /// graver news.
    func failure(host: String, expectedPins: [SPKIPin]) -> TrustFailure? {
        // The underlying account does not name the host, so that it can follow the lapse without being cut.
        guard let underlying = underlyingFailure(expectedPins: expectedPins) else { return nil }
        guard let lapse = validityLapse, underlying.reason != .revoked else { return underlying.naming(host) }
        let sameError = underlying.verifyError == lapse.verifyError && underlying.depth == lapse.depth
        guard reachesAnchorForHost else {
            return underlying.naming(host, then: sameError ? "" : "; also: \(lapse.description)")
        }
        var failure = TrustFailure(
            reason: .chainInvalid, verifyError: lapse.verifyError, depth: lapse.depth,
            message: "\(host): \(lapse.description) (X509_V_ERR \(lapse.verifyError))\(sameError ? "" : "; also: \(underlying.message)")",
            expectedPins: expectedPins, seenPins: underlying.seenPins)
        failure.violation = underlying.violation
        return failure
    }

    /// The failure as OpenSSL and the profile found it, before the validity lapse is put first and the host
    /// is named.
    private func underlyingFailure(expectedPins: [SPKIPin]) -> TrustFailure? {
        guard !verified else { return nil }
        if let violation {
            // Which profile applied and why: under auto, what a rule refused depends on the anchor.
            let profile = appliedProfile.map { " under \($0)" } ?? ""
            return TrustFailure(
                reason: .chainInvalid, verifyError: nil, depth: violation.depth,
                message: "certificate rejected\(profile): \(violation)", expectedPins: expectedPins,
                seenPins: chain.map(\.spkiPin), violation: violation)
        }
        if let reason = TrustFailure.Reason.revocation(verifyError: error) {
            let subject = depth < chain.count ? " (\(chain[depth].subject))" : ""
            let what = reason == .revoked ? "certificate revoked" : "revocation check failed"
            return TrustFailure(
                reason: reason, verifyError: error, depth: depth,
                message: "\(what) at depth \(depth)\(subject): \(errorMessage) (X509_V_ERR \(error))",
                expectedPins: expectedPins, seenPins: chain.map(\.spkiPin))
        }
        let hostError = Self.isHostError(error)
        let message =
            hostError
            ? "the certificate is not for this host (\(errorMessage))"
            : "certificate verify failed at depth \(depth): \(errorMessage) (X509_V_ERR \(error))"
        return TrustFailure(
            reason: hostError ? .hostMismatch : .chainInvalid, verifyError: error, depth: depth, message: message,
            expectedPins: expectedPins, seenPins: chain.map(\.spkiPin))
    }
}

extension TrustFailure {
    /// The same failure with its message led by `host` and followed by `more`.
    fileprivate func naming(_ host: String, then more: String = "") -> TrustFailure {
        TrustFailure(
            reason: reason, verifyError: verifyError, depth: depth, message: "\(host): \(message)\(more)",
            expectedPins: expectedPins, seenPins: seenPins, violation: violation)
    }
}
