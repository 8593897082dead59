/// Whether one watched target (a host name or an IP address) can be reached, and through which interface.
public struct TargetReachability: Sendable, Equatable {
    /// The target as it was given: a host name or a numeric address.
    public var target: String
    public var status: ReachabilityStatus
    /// The egress interface of the first reachable address.
    public var interfaceName: String?
    /// The address that was found reachable, or the first one tried.
    public var address: IPAddress?
    /// Why the target is not reachable; `nil` when it is.
    public var reason: UnreachableReason?

    public init(target: String, status: ReachabilityStatus, interfaceName: String?, address: IPAddress?, reason: UnreachableReason?) {
        self.target = target
        self.status = status
        self.interfaceName = interfaceName
        self.address = address
        self.reason = reason
    }

    static func reachable(_ target: String, via interfaceName: String, address: IPAddress) -> Self {
        Self(target: target, status: .reachable, interfaceName: interfaceName, address: address, reason: nil)
    }

    static func unreachable(_ target: String, _ reason: UnreachableReason, address: IPAddress? = nil) -> Self {
        Self(target: target, status: .unreachable, interfaceName: nil, address: address, reason: reason)
    }
}
