import PinpathSupport

/// A failure to start or use the reachability monitor (not "unreachable", which is a status).
public typealias ReachabilityError = CodedError<ReachabilityErrorCode>

/// What went wrong in a ``ReachabilityError``, as an extensible set of codes.
public struct ReachabilityErrorCode: ErrorCode {
    /// The name, as written in logs and JSON.
    public let name: String
    /// A target that is neither an IP address nor a host name.
    public static let invalidTarget = Self(name: "invalid_target")
    /// Netlink cannot be used here (a restricted sandbox, a socket error).
    public static let netlinkUnavailable = Self(name: "netlink_unavailable")
    /// The network namespace to monitor cannot be opened or entered (no such name under /run/netns).
    public static let namespaceUnavailable = Self(name: "namespace_unavailable")
    /// The monitor was used before `start()` or after `stop()`.
    public static let notRunning = Self(name: "not_running")
}
