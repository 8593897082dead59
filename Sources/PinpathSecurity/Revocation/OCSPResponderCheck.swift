import FoundationEssentials

/// Under ``RevocationMode/ocsp`` with no staple: the leaf's status from its responder's answer as the
/// ``OCSPResponseCache`` holds it. Without a cached entry the handshake stops with
/// ``TrustFailure/Reason/ocspQueryNeeded`` and the query to send (a session sends it and connects again);
/// without a usable answer, ``SecurityPolicy/ocspSoftFail`` decides.
struct OCSPResponderCheck {
    /// What the check found, for reports.
    private(set) var check: OCSPCheck
    /// Why the connection must be refused, or `nil`.
    private(set) var failure: TrustFailure?
    /// The question to ask the responder before the connection can be judged.
    private(set) var pendingQuery: OCSPQuery?

    /// Judges the leaf of `chain` (verified, leaf first).
    /// - Parameter responses: the answers the caller fetched; `nil` where no responder can be asked (the
    ///   responder's own connection, an evaluation outside a session): the status is then unavailable.
    init(chain: [Certificate], host: String, softFail: Bool, responses: OCSPResponseCache?, now: Date) {
        let seenPins = chain.map(\.spkiPin)
        func refusal(_ reason: TrustFailure.Reason, _ message: String) -> TrustFailure {
            TrustFailure(
                reason: reason, verifyError: nil, depth: 0, message: "\(host): \(message)", expectedPins: [], seenPins: seenPins)
        }
        func unavailable(_ detail: String, url: URL?) -> (OCSPCheck, TrustFailure?) {
            let check = OCSPCheck(unavailable: detail, responderURL: url, softFailed: softFail)
            let failure =
                softFail
                ? nil
                : refusal(
                    .ocspUnavailable,
                    "no usable OCSP answer about its certificate (revocation: ocsp, soft_fail: false): \(detail)")
            return (check, failure)
        }
        guard let leaf = chain.first else {
            (check, failure) = unavailable("no verified chain", url: nil)
            return
        }
        guard let issuer = chain.dropFirst().first else {
            (check, failure) = unavailable("\(leaf.subject) is its own anchor: no issuer answers for it", url: nil)
            return
        }
        let query: OCSPQuery
        do {
            query = try OCSPQuery(leaf: leaf, issuer: issuer)
        } catch {
            (check, failure) = unavailable(error.message, url: nil)
            return
        }
        let url = query.responderURL.absoluteString
        guard let responses else {
            (check, failure) = unavailable(
                "the responder \(url) cannot be asked from here (no responder client: an evaluation outside a session, or a "
                    + "responder's own connection)", url: query.responderURL)
            return
        }
        switch responses.entry(for: query.certificateID, now: now) {
        case nil:
            check = OCSPCheck(unavailable: "not asked yet", responderURL: query.responderURL, softFailed: false)
            pendingQuery = query
            failure = refusal(
                .ocspQueryNeeded, "the revocation status of \(leaf.subject) must first be asked from its OCSP responder \(url)")
        case .unavailable(let detail):
            (check, failure) = unavailable(detail, url: query.responderURL)
        case .answer(let answer):
            check = OCSPCheck(answer: answer, stapled: false, detail: nil)
            if answer.status == .revoked {
                let when = answer.revokedAt.map { " at \($0.formatted(.iso8601))" } ?? ""
                failure = refusal(
                    .revoked,
                    "certificate revoked at depth 0 (\(leaf.subject)): the OCSP response from \(url) says it was revoked\(when)")
            } else if answer.status == .unknown {
                failure = refusal(
                    .ocspStatusUnknown, "the OCSP response from \(url) says the status of \(leaf.subject) is unknown")
            }
        }
    }
}
