import PinpathReachability

/// The gate's rule for a host the monitor watches, exported so that the agent judges its endpoints as the
/// gate will judge their requests.
///
/// A watched target (the agent registers its endpoints' hosts) has its own verdict, with its resolved
/// addresses' routes. A name the monitor failed to resolve is left to libcurl's own resolver: that is the
/// service's problem (or DNS's), not the path's, and the request reports it as a resolve failure.
public enum WatchedHostVerdict: Sendable, Equatable {
    /// The monitor watches the host and it is reachable.
    case reachable
    /// The monitor watches the host and it is not reachable: the gate refuses it with this verdict.
    case unreachable(TargetReachability)
    /// The monitor watches the host but could not resolve its name: the request goes ahead and reports it.
    case leftToResolver
    /// The monitor does not watch the host: the path as a whole decides.
    case notWatched

    /// The verdict on `host` (a bare name or address, no brackets) in `path`.
    public init(_ host: String, on path: NetworkPath) {
        guard let watched = path.target(host) else {
            self = .notWatched
            return
        }
        if watched.reason == .dnsFailed {
            self = .leftToResolver
        } else {
            self = watched.status == .reachable ? .reachable : .unreachable(watched)
        }
    }
}
