import FoundationEssentials

/// A handshake's stapled OCSP response judged under a policy's ``RevocationMode``, on a chain the policy
/// already accepted: the subject of ``StapledOCSPStatus``, which records the staple it read here.
struct StapledOCSPCheck {
    /// The stapled response's bytes, or `nil` when the server sent none.
    let response: [UInt8]?
    /// What the policy demands of the staple.
    let mode: RevocationMode
    /// The verified chain, leaf first: the staple must be about its leaf and signed by its issuer.
    let chain: [Certificate]
    /// The host, for messages.
    let host: String
    /// The time the response must be valid at.
    let now: Date
    /// The staple as read, or `nil` when none was sent or it could not be read.
    var staple: OCSPStaple?
    /// Why the connection must be refused, or `nil`.
    private(set) var failure: TrustFailure?

    /// Runs ``StapledOCSPStatus`` on the response.
    init(response: [UInt8]?, mode: RevocationMode, chain: [Certificate], host: String, now: Date) {
        self.response = response
        self.mode = mode
        self.chain = chain
        self.host = host
        self.now = now
        if case .failsToMeetRule(let failure) = StapledOCSPStatus().evaluate(&self) { self.failure = failure }
    }
}
