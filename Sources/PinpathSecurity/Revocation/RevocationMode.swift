/// How a ``SecurityPolicy`` uses the OCSP response a server staples to its handshake (RFC 6066 §8).
///
/// Whatever the mode, a leaf carrying the TLS feature extension with `status_request` (must-staple, RFC 7633)
/// needs a good staple: its CA promised that one is always sent, so a missing one means it was held back.
public enum RevocationMode: String, Sendable, CaseIterable {
    /// No staple needed; a staple the server sends is not checked (except under must-staple).
    case none
    /// A staple the server sends must verify and say the leaf is good; a missing one is accepted.
    case stapled
    /// A staple is required, and must verify and say the leaf is good.
    case requireStapled = "require_stapled"
    /// A staple the server sends is judged as under ``stapled``; without one, the responder named in the leaf's
    /// AIA extension is asked (``OCSPQuery``) and its answer, verified as a staple is, must say the leaf is
    /// good. What an unreachable or unusable responder means is ``SecurityPolicy/ocspSoftFail``'s choice.
    case ocsp

    /// Orders the modes by what they demand: `none` < `stapled` < `ocsp` < `require_stapled` (which refuses
    /// what `ocsp` would ask a responder about).
    var strictness: Int {
        switch self {
        case .none: 0
        case .stapled: 1
        case .ocsp: 2
        case .requireStapled: 3
        }
    }
}
