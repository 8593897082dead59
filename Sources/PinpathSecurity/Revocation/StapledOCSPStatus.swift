import FoundationEssentials

/// The stapled OCSP response, when the policy's ``RevocationMode`` or the leaf's must-staple extension (RFC
/// 7633) asks for one, is there, verifies against the leaf's issuer, is current and says the leaf is good.
/// Under ``RevocationMode/none`` a staple is read (for reports) but only judged when the leaf promised one.
struct StapledOCSPStatus: VerifierRule {
    func evaluate(_ check: inout StapledOCSPCheck) -> RuleResult<TrustFailure> {
        guard let leaf = check.chain.first else { return .meetsRule }
        let host = check.host
        let chain = check.chain
        func refusal(_ reason: TrustFailure.Reason, _ message: String) -> RuleResult<TrustFailure> {
            .failsToMeetRule(
                reason: TrustFailure(
                    reason: reason, verifyError: nil, depth: 0, message: "\(host): \(message)", expectedPins: [],
                    seenPins: chain.map(\.spkiPin)))
        }
        let mustStaple = leaf.requiresStapledOCSP
        guard let response = check.response, !response.isEmpty else {
            guard check.mode == .requireStapled || mustStaple else { return .meetsRule }
            let why =
                mustStaple
                ? "its certificate (\(leaf.subject)) is must-staple" : "the policy requires one (revocation: require_stapled)"
            return refusal(.ocspStapleMissing, "the server stapled no OCSP response, and \(why)")
        }
        let judged = check.mode != .none || mustStaple
        let read: OCSPStaple
        do {
            read = try OCSPStaple(der: response, leaf: leaf, issuer: chain.dropFirst().first, now: check.now)
        } catch {
            return judged ? refusal(.ocspStapleInvalid, "\(error)") : .meetsRule
        }
        check.staple = read
        guard judged else { return .meetsRule }
        if let problem = read.problem {
            return refusal(
                .ocspStapleInvalid, "the stapled OCSP response from \(read.responder) cannot be relied on: \(problem)")
        }
        if read.status == .revoked {
            let when = read.revokedAt.map { " at \($0.formatted(.iso8601))" } ?? ""
            return refusal(
                .revoked,
                "certificate revoked at depth 0 (\(leaf.subject)): the stapled OCSP response from \(read.responder) "
                    + "says it was revoked\(when)")
        }
        if read.status == .unknown {
            return refusal(
                .ocspStatusUnknown,
                "the stapled OCSP response from \(read.responder) says the status of \(leaf.subject) is unknown")
        }
        return .meetsRule
    }
}
