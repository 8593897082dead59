/// NetworkManager's connectivity states: whether the internet answers, beyond the local route.
/// Raw values are the names used in JSON, metrics and the terminal.
public enum ConnectivityState: String, Sendable, Equatable, CaseIterable {
    /// No path at all (no default route, or none to the check's host): nothing was sent.
    case none
    /// A route, but the check could not resolve, connect or finish in time: a dead upstream.
    case limited
    /// The check was answered, but not as expected (another status or body, a redirect, a TLS failure): a
    /// captive portal, or a proxy in the way.
    case portal
    /// The check got the expected answer.
    case full
}
