/// A failure to start or use the reachability monitor (not "unreachable", which is a status).
public struct ReachabilityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as an extensible set of codes.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        public var description: String { name }
        /// A target that is neither an IP address nor a host name.
        public static let invalidTarget = Code(name: "invalid_target")
        /// Netlink cannot be used here (a restricted sandbox, a missing namespace, a socket error).
        public static let netlinkUnavailable = Code(name: "netlink_unavailable")
        /// The monitor was used before `start()` or after `stop()`.
        public static let notRunning = Code(name: "not_running")
    }

    public let code: Code
    /// A sentence for a person: names the input and what was wrong.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
