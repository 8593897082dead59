/// How a verification that did not pass is reported: a profile violation, a revocation, a wrong host or an
/// invalid chain.
extension ChainVerification {
    /// The failure to report for `host`, or `nil` when the verification passed (with chain errors ignored if
    /// that was asked for): a host mismatch or an invalid chain, with the pins of the chain built.
    func failure(host: String, expectedPins: [SPKIPin]) -> TrustFailure? {
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
