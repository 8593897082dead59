import COpenSSL

/// Why a chain was not trusted, with what a report or an OkHttp-style message needs.
public struct TrustFailure: Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure, as an extensible set of values.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in logs and JSON.
        public var description: String { name }
        /// The chain does not validate (expired, unknown issuer, weak signature, …): see ``verifyError``.
        public static let chainInvalid = Reason(name: "chain_invalid")
        /// The certificate is not for the host name or IP address connected to.
        public static let hostMismatch = Reason(name: "host_mismatch")
        /// No certificate of the verified chain matches a pin (or, in certificate mode, no pinned certificate
        /// anchors it).
        public static let pinMismatch = Reason(name: "pin_mismatch")
        /// The pins expired, so they were not checked; the chain and name were.
        public static let pinsExpired = Reason(name: "pins_expired")
    }

    /// The kind of failure.
    public let reason: Reason
    /// OpenSSL's `X509_V_ERR_*` code for chain and host failures.
    public let verifyError: Int32?
    /// The chain depth OpenSSL reported the error at (0 is the leaf).
    public let depth: Int?
    /// A sentence for a person; for pin failures, OkHttp's shape (each certificate's pin and subject, then
    /// the pins expected).
    public let message: String
    /// The pins that would have been accepted.
    public let expectedPins: [SPKIPin]
    /// The pin of each certificate of the verified chain, by depth (index 0 is the leaf).
    public let seenPins: [SPKIPin]
    /// The profile rule the chain broke (``VerificationProfile``), when that is why it was rejected.
    public var violation: ProfileViolation?

    /// Whether the failure is a certificate of the chain outside its validity period (expired or not yet valid),
    /// named first in ``message`` whatever else was wrong after it (the HTTP core's `tls_expired` category). Only
    /// for a chain that reaches an anchor of the policy for the host: a lapsed certificate in any other chain (an
    /// interception's, a wrong server's) is said after the trust failure, which stays the failure.
    public var isOutsideValidity: Bool {
        reason == .chainInvalid && (verifyError == X509_V_ERR_CERT_HAS_EXPIRED || verifyError == X509_V_ERR_CERT_NOT_YET_VALID)
    }

    /// The message.
    public var description: String { message }

    /// ``message`` without the `host: ` it starts with, for a message that says it after something else about
    /// `host`; the whole message when it does not start so.
    func message(withoutHost host: String) -> String {
        let prefix = "\(host): "
        return message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
    }
}
