/// The outcome of one connectivity check: the state, why, and the check's timings when it was sent.
public struct ConnectivityVerdict: Sendable, Equatable {
    /// The state.
    public var state: ConnectivityState
    /// Why, for a person: `redirected (302) to portal.example`, `connect_failed: …`, `no_route`. Never a
    /// query string or credentials: a portal's redirect may carry tokens.
    public var reason: String
    /// The check's phase timings; `nil` when nothing was sent (`none`) or nothing answered.
    public var timings: PhaseTimings?

    public init(state: ConnectivityState, reason: String, timings: PhaseTimings? = nil) {
        self.state = state
        self.reason = reason
        self.timings = timings
    }
}
