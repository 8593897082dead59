import FoundationEssentials

extension TrustEvaluation {
    /// This evaluation after the handshake's stapled OCSP response is judged under the policy's
    /// ``RevocationMode`` (``StapledOCSPCheck``): the staple recorded, and the connection refused when the
    /// check fails. An evaluation that already refused the connection is returned as it is, with the staple.
    /// - Parameters:
    ///   - response: the stapled response's bytes, or `nil` when the server sent none.
    ///   - now: the time the response must be valid at.
    func applyingStaple(_ response: [UInt8]?, now: Date) -> TrustEvaluation {
        let check = StapledOCSPCheck(
            response: response, mode: policy.revocation, chain: verifiedChain, host: host, now: now)
        var updated = self
        if let failure = check.failure, allowsConnection {
            updated = TrustEvaluation(
                verdict: .rejected(failure), allowsConnection: false, host: host, port: port, date: date,
                policy: policy, servedChain: servedChain, verifiedChain: verifiedChain, appliedProfile: appliedProfile)
        }
        updated.ocspStaple = check.staple
        return updated
    }
}
