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
        guard let underlying = underlyingFailure(host: host, expectedPins: expectedPins) else { return nil }
        guard let lapse = validityLapse, underlying.reason != .revoked else { return underlying }
        guard reachesAnchorForHost else {
            let sameError = underlying.verifyError == lapse.verifyError && underlying.depth == lapse.depth
            return TrustFailure(
                reason: underlying.reason, verifyError: underlying.verifyError, depth: underlying.depth,
                message: underlying.message + (sameError ? "" : "; also: \(lapse.description)"),
                expectedPins: expectedPins, seenPins: underlying.seenPins, violation: underlying.violation)
        }
        let rest = underlying.message(withoutHost: host)
        let sameError = underlying.verifyError == lapse.verifyError && underlying.depth == lapse.depth
        var failure = TrustFailure(
            reason: .chainInvalid, verifyError: lapse.verifyError, depth: lapse.depth,
            message: "\(host): \(lapse.description) (X509_V_ERR \(lapse.verifyError))\(sameError ? "" : "; also: \(rest)")",
            expectedPins: expectedPins, seenPins: underlying.seenPins)
        failure.violation = underlying.violation
        return failure
    }

    /// The failure as OpenSSL and the profile found it, before the validity lapse is put first.
    private func underlyingFailure(host: String, expectedPins: [SPKIPin]) -> TrustFailure? {
        guard !verified else { return nil }
        if let violation {
            // Which profile applied and why: under auto, what a rule refused depends on the anchor.
            let profile = appliedProfile.map { " under \($0)" } ?? ""
            return TrustFailure(
                reason: .chainInvalid, verifyError: nil, depth: violation.depth,
                message: "\(host): certificate rejected\(profile): \(violation)", expectedPins: expectedPins,
                seenPins: chain.map(\.spkiPin), violation: violation)
        }
        if let reason = TrustFailure.Reason.revocation(verifyError: error) {
            let subject = depth < chain.count ? " (\(chain[depth].subject))" : ""
            let what = reason == .revoked ? "certificate revoked" : "revocation check failed"
            return TrustFailure(
                reason: reason, verifyError: error, depth: depth,
                message: "\(host): \(what) at depth \(depth)\(subject): \(errorMessage) (X509_V_ERR \(error))",
                expectedPins: expectedPins, seenPins: chain.map(\.spkiPin))
        }
        let hostError = Self.isHostError(error)
        let message =
            hostError
            ? "\(host): the certificate is not for this host (\(errorMessage))"
            : "\(host): certificate verify failed at depth \(depth): \(errorMessage) (X509_V_ERR \(error))"
        return TrustFailure(
            reason: hostError ? .hostMismatch : .chainInvalid, verifyError: error, depth: depth, message: message,
            expectedPins: expectedPins, seenPins: chain.map(\.spkiPin))
    }
}
