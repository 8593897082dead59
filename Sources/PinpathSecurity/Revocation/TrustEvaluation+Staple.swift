import FoundationEssentials

extension TrustEvaluation {
    /// This evaluation after the handshake's stapled OCSP response is judged under the policy's
    /// ``RevocationMode`` (``StapledOCSPCheck``) and, under ``RevocationMode/ocsp`` without a staple, after the
    /// leaf's responder's answer is (``OCSPResponderCheck``): the staple and the OCSP status recorded, and the
    /// connection refused when a check fails. An evaluation that already refused the connection is returned
    /// as it is, with the staple.
    /// - Parameters:
    ///   - response: the stapled response's bytes, or `nil` when the server sent none.
    ///   - now: the time the response must be valid at.
    ///   - responses: the responders' answers fetched so far; `nil` where none can be asked.
    func applyingStaple(_ response: [UInt8]?, now: Date, responses: OCSPResponseCache? = nil) -> TrustEvaluation {
        let check = StapledOCSPCheck(
            response: response, mode: policy.revocation, chain: verifiedChain, host: host, now: now)
        var updated = self
        updated.ocspStaple = check.staple
        guard allowsConnection else { return updated }
        let asksResponders = policy.revocation == .ocsp
        if let failure = check.failure {
            if asksResponders {
                updated.ocspCheck =
                    check.staple.map { OCSPCheck(answer: $0, stapled: true, detail: failure.message) }
                    ?? OCSPCheck(unavailable: failure.message, responderURL: nil, softFailed: false)
            }
            return updated.refusing(failure)
        }
        guard asksResponders else { return updated }
        // A staple that answers takes precedence: it verified and said good, or it failed above.
        if let staple = check.staple {
            updated.ocspCheck = OCSPCheck(answer: staple, stapled: true, detail: nil)
            return updated
        }
        let responder = OCSPResponderCheck(
            chain: verifiedChain, host: host, softFail: policy.ocspSoftFail, responses: responses, now: now)
        updated.ocspCheck = responder.check
        updated.pendingOCSPQuery = responder.pendingQuery
        return responder.failure.map(updated.refusing) ?? updated
    }

    /// This evaluation with the connection refused for `failure`, keeping what the handshake recorded.
    private func refusing(_ failure: TrustFailure) -> TrustEvaluation {
        var refused = TrustEvaluation(
            verdict: .rejected(failure), allowsConnection: false, host: host, port: port, date: date,
            policy: policy, servedChain: servedChain, verifiedChain: verifiedChain,
            chainIsAnchoredForHost: chainIsAnchoredForHost, appliedProfile: appliedProfile)
        refused.ocspStaple = ocspStaple
        refused.ocspCheck = ocspCheck
        refused.pendingOCSPQuery = pendingOCSPQuery
        return refused
    }
}
