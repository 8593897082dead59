import FoundationEssentials

/// The verdict of a handshake's stapled OCSP response under a policy's ``RevocationMode``, on a chain the
/// policy already accepted.
struct StapledOCSPCheck {
    /// The staple as read, or `nil` when none was sent or it could not be read.
    let staple: OCSPStaple?
    /// Why the connection must be refused, or `nil`.
    let failure: TrustFailure?

    /// - Parameters:
    ///   - response: the stapled response's bytes, or `nil` when the server sent none.
    ///   - chain: the verified chain, leaf first: the staple must be about its leaf and signed by its issuer.
    init(response: [UInt8]?, mode: RevocationMode, chain: [Certificate], host: String, now: Date) {
        guard let leaf = chain.first else {
            staple = nil
            failure = nil
            return
        }
        func refusal(_ reason: TrustFailure.Reason, _ message: String) -> TrustFailure {
            TrustFailure(
                reason: reason, verifyError: nil, depth: 0, message: "\(host): \(message)", expectedPins: [],
                seenPins: chain.map(\.spkiPin))
        }
        let mustStaple = leaf.requiresStapledOCSP
        guard let response, !response.isEmpty else {
            staple = nil
            if mode == .requireStapled || mustStaple {
                let why = mustStaple ? "its certificate (\(leaf.subject)) is must-staple" : "the policy requires one (revocation: require_stapled)"
                failure = refusal(.ocspStapleMissing, "the server stapled no OCSP response, and \(why)")
            } else {
                failure = nil
            }
            return
        }
        // Under `none` a staple is read (for reports) but only judged when the leaf promised one.
        let judged = mode != .none || mustStaple
        let read: OCSPStaple
        do {
            read = try OCSPStaple(der: response, leaf: leaf, issuer: chain.dropFirst().first, now: now)
        } catch {
            staple = nil
            failure = judged ? refusal(.ocspStapleInvalid, "\(error)") : nil
            return
        }
        staple = read
        guard judged else {
            failure = nil
            return
        }
        if let problem = read.problem {
            failure = refusal(.ocspStapleInvalid, "the stapled OCSP response from \(read.responder) cannot be relied on: \(problem)")
        } else if read.status == .revoked {
            let when = read.revokedAt.map { " at \($0.formatted(.iso8601))" } ?? ""
            failure = refusal(.revoked, "certificate revoked at depth 0 (\(leaf.subject)): the stapled OCSP response from \(read.responder) says it was revoked\(when)")
        } else if read.status == .unknown {
            failure = refusal(.ocspStatusUnknown, "the stapled OCSP response from \(read.responder) says the status of \(leaf.subject) is unknown")
        } else {
            failure = nil
        }
    }
}
