/// One endpoint's `up` / `down` / `unreachable` state, decided from probe results and the path, with the
/// thresholds that keep a single bad probe from raising an alert.
///
/// The rules, each covered by a row of the tests' table:
/// - The state starts `unknown`. The first success makes it `up` at once; failures count toward
///   `failureThreshold` and only then make it `down`. A success cannot be a false alarm, so there is
///   nothing to wait for; a first failure may be a transient one, so it waits like any other.
/// - `up` becomes `down` after `failureThreshold` consecutive failures; `down` becomes `up` after
///   `successThreshold` consecutive successes. A result of the other kind resets the count.
/// - `pathUnreachable` (the path, or the endpoint's target, is not reachable) makes any state `unreachable`
///   at once, distinct from `down`: the endpoint was not tried. Results that arrive while the path is
///   unreachable (probes that were in flight) are ignored: they say nothing about the endpoint. The agent
///   never gives it for a TLS endpoint whose host is a name while the path itself is reachable: that target's
///   verdict is made of a DNS answer (``EndpointTracker/hostVerdictMayOnlyRaise(_:)``), and its probes fail.
/// - `connectivityLimited`, `captivePortal` and `connectivityIntercepted` (the connectivity check found a dead
///   upstream, a portal or a TLS interception, and the endpoint is a plain one outside the local network) act as
///   `pathUnreachable`, with their own cause. The agent never gives them for an endpoint whose probe involves
///   TLS (``EndpointTracker/connectivityMayHold(_:)``).
/// - `pathReachable` changes no state; probes resume, and the next results decide as they do from
///   `unknown`: a success is `up` at once, failures count toward the threshold.
/// - A probe that fails only the pin check in report-only mode is a success here: the caller passes
///   `probeSucceeded` (the report is a separate event).
///
/// A value: the agent keeps one per endpoint, on one task.
struct EndpointState: Sendable, Equatable {
    /// The state an event reports.
    enum Status: String, Sendable, CaseIterable {
        /// No result yet (never reported as a state; it is `previous_state: null` in the first event).
        case unknown
        /// Probes pass.
        case up
        /// Probes fail.
        case down
        /// Probes are not attempted: the path or the target is not reachable, or (for a plain endpoint outside
        /// the local network) the connectivity check says `limited`, `portal` or `intercepted`.
        case unreachable
    }

    /// What the state machine is told.
    enum Input: String, Sendable, CaseIterable {
        /// A probe passed (report-only pin failures included).
        case probeSucceeded = "probe_succeeded"
        /// A probe failed.
        case probeFailed = "probe_failed"
        /// The path or the endpoint's target stopped being reachable.
        case pathUnreachable = "path_unreachable"
        /// The connectivity check says `limited` (a dead upstream) and the endpoint is outside the local network.
        case connectivityLimited = "connectivity_limited"
        /// The connectivity check says `portal` (a captive portal answers) and the endpoint is outside the
        /// local network.
        case captivePortal = "captive_portal"
        /// The connectivity check says `intercepted` (its server presented a certificate the check's policy
        /// refuses) and the endpoint is outside the local network.
        case connectivityIntercepted = "connectivity_intercepted"
        /// It is reachable again.
        case pathReachable = "path_reachable"
    }

    /// A change of state: what `endpoint.state_changed` reports.
    struct Transition: Sendable, Equatable {
        /// The state before.
        let previous: Status
        /// The state now.
        let current: Status
        /// The input that decided it.
        let cause: Input
        /// How many consecutive results of that kind decided it (1 for path inputs).
        let consecutive: Int
    }

    /// Consecutive failures that make `up` (or `unknown`) `down`; at least 1.
    let failureThreshold: Int
    /// Consecutive successes that make `down` `up`; at least 1.
    let successThreshold: Int
    /// The current state.
    private(set) var status = Status.unknown
    /// Whether probes run: false between `pathUnreachable` and `pathReachable`.
    private(set) var pathIsReachable = true
    private var failures = 0
    private var successes = 0

    /// - Parameters:
    ///   - failureThreshold: the issue's `failure_threshold`, 2 by default.
    ///   - successThreshold: the issue's `success_threshold`, 1 by default.
    init(failureThreshold: Int = 2, successThreshold: Int = 1) {
        precondition(failureThreshold >= 1 && successThreshold >= 1, "thresholds must be at least 1")
        self.failureThreshold = failureThreshold
        self.successThreshold = successThreshold
    }

    /// Applies one input; returns the transition it caused, or nil when the state stays.
    mutating func apply(_ input: Input) -> Transition? {
        switch input {
        case .pathUnreachable, .connectivityLimited, .captivePortal, .connectivityIntercepted:
            pathIsReachable = false
            (failures, successes) = (0, 0)
            return move(to: .unreachable, cause: input, consecutive: 1)
        case .pathReachable:
            pathIsReachable = true
            (failures, successes) = (0, 0)
            return nil
        case .probeSucceeded:
            guard pathIsReachable else { return nil }
            (failures, successes) = (0, successes + 1)
            let decided = status != .down || successes >= successThreshold
            return decided ? move(to: .up, cause: input, consecutive: successes) : nil
        case .probeFailed:
            guard pathIsReachable else { return nil }
            (failures, successes) = (failures + 1, 0)
            return failures >= failureThreshold ? move(to: .down, cause: input, consecutive: failures) : nil
        }
    }

    private mutating func move(to next: Status, cause: Input, consecutive: Int) -> Transition? {
        guard next != status else { return nil }
        defer { status = next }
        return Transition(previous: status, current: next, cause: cause, consecutive: consecutive)
    }
}
