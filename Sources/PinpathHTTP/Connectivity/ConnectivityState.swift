/// NetworkManager's connectivity states, and `intercepted`: whether the internet answers, beyond the local route.
/// Raw values are the names used in JSON, metrics and the terminal.
///
/// Every state but `none` is decided by what the network answered the check, which anyone on the path can
/// write: a verdict is context, never proof that the path is clean.
public enum ConnectivityState: String, Sendable, Equatable, CaseIterable {
    /// No path at all (no default route, or none to the check's host): nothing was sent.
    case none
    /// A route, but the check got no usable answer: it could not resolve, connect or finish in time, or its TLS
    /// handshake was cut off before a certificate (a reset, an end of stream, garbage). A dead upstream.
    case limited
    /// The check was answered, but not as expected (another status or body, a redirect): a captive portal, or a
    /// proxy in the way.
    case portal
    /// The check's server presented a certificate the check's policy refuses (`tls_invalid`, `policy_rejected`):
    /// someone on the path intercepts TLS. A handshake cut off before any certificate is `limited`.
    case intercepted
    /// The check got the expected answer.
    case full
}
