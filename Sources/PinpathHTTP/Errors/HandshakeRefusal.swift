import PinpathSecurity

/// How pinpath's verifier's verdict on a refused handshake becomes an ``HTTPError``, whoever drove the handshake:
/// libcurl (``CurlErrorMapping``) or the handshake engine (``HandshakeCheck``).
enum HandshakeRefusal {
    /// The error for a handshake that `verdict` refused: a pin mismatch is `policy_rejected`, a revoked
    /// certificate `revoked`, one outside its validity `tls_expired`, any other rejection `tls_invalid`, and a
    /// failure to evaluate at all `tls_failed`; `nil` when the verdict let the connection through (the handshake
    /// failed for another reason).
    /// - Parameters:
    ///   - request: the request, for the message (`GET tls://127.0.0.1:443`).
    ///   - account: added after the reason (a STARTTLS kind's account of what went in plaintext), with its `; `.
    static func error(
        for verdict: Result<TrustEvaluation, SecurityError>, request: String, account: String = "", curlCode: Int? = nil
    ) -> HTTPError? {
        switch verdict {
        case .success(let evaluation) where !evaluation.allowsConnection:
            let rejection = evaluation.failure
            let pins = rejection?.reason == .pinMismatch || rejection?.reason == .pinsExpired
            // Revocation has a category of its own: a monitor alerts on it differently from a broken chain.
            // So has an expiry: a date to fix, not a broken PKI or an interception.
            let code: HTTPError.Code =
                if pins { .policyRejected } else if rejection?.reason == .revoked {
                    .revoked
                } else if rejection?.isOutsideValidity == true {
                    .tlsExpired
                } else { .tlsInvalid }
            return HTTPError(
                code, "\(request): \(rejection?.message ?? "rejected by the security policy")\(account)", evaluation: evaluation,
                curlCode: curlCode)
        case .failure(let error):
            return HTTPError(.tlsFailed, "\(request): \(error.message)\(account)", curlCode: curlCode)
        default:
            return nil
        }
    }
}
