/// A snapshot of what this machine can reach, computed from the kernel's links, addresses and routes.
///
/// The Linux counterpart of `NWPath`: overall status, the primary egress interface, per-family
/// availability, and the interfaces behind them. Values are immutable; the monitor publishes a new one
/// on every change.
public struct NetworkPath: Sendable, Equatable {
    /// `reachable` when IPv4 or IPv6 has a default path through a usable interface.
    public var status: ReachabilityStatus
    /// The interface the kernel would send internet traffic through (IPv4's if it has one, else IPv6's).
    public var primaryInterface: NetworkInterface?
    /// Per-family egress: `nil` when the family has no usable default path.
    public var ipv4: FamilyPath?
    public var ipv6: FamilyPath?
    /// Every interface the kernel reports, ordered by index.
    public var interfaces: [NetworkInterface]
    /// The watched targets, in the order they were added.
    public var targets: [TargetReachability]

    /// `true` when the primary interface is one users pay for by volume (cellular), as `NWPath.isExpensive`.
    public var isExpensive: Bool { primaryInterface?.kind.isExpensive ?? false }

    /// The gateways of the per-family default paths, IPv4 first; on-link paths have none.
    public var gateways: [IPAddress] { [ipv4?.gateway, ipv6?.gateway].compactMap { $0 } }

    public init(
        status: ReachabilityStatus, primaryInterface: NetworkInterface?, ipv4: FamilyPath?, ipv6: FamilyPath?,
        interfaces: [NetworkInterface], targets: [TargetReachability]
    ) {
        self.status = status
        self.primaryInterface = primaryInterface
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.interfaces = interfaces
        self.targets = targets
    }

    /// The default path of `family`, if it has one.
    public func path(for family: IPFamily) -> FamilyPath? { family == .ipv4 ? ipv4 : ipv6 }

    /// The watched target named `target`, as it was added.
    public func target(_ target: String) -> TargetReachability? { targets.first { $0.target == target } }
}
