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

/// Whether something can be reached.
public enum ReachabilityStatus: String, Sendable, Equatable, Codable {
    case reachable
    case notReachable = "not_reachable"
}

/// How one address family leaves the machine: the kernel's answer for an internet destination.
public struct FamilyPath: Sendable, Equatable {
    /// The egress interface's index and name.
    public var interfaceIndex: Int
    public var interfaceName: String
    /// The next hop, or `nil` for an on-link (point-to-point, VPN) route.
    public var gateway: IPAddress?
    /// The source address the kernel would choose.
    public var source: IPAddress?
    /// The routing table the answer came from (254 is `main`; wg-quick uses 51820).
    public var table: UInt32
}

/// One network interface, as the kernel reports it.
public struct NetworkInterface: Sendable, Equatable {
    public var index: Int
    public var name: String
    public var kind: InterfaceKind
    /// IFF_UP: the administrator brought it up.
    public var isAdminUp: Bool
    /// systemd's rule: operstate UP, or UNKNOWN with LOWER_UP and RUNNING and not DORMANT.
    public var hasCarrier: Bool
    public var operationalState: OperationalState
    public var mtu: Int
    /// Addresses a socket can use now: IPv6 tentative and DAD-failed addresses are left out.
    public var addresses: [InterfaceAddress]

    /// Up, with carrier: able to carry traffic.
    public var isUsable: Bool { isAdminUp && hasCarrier }
}

/// An address assigned to an interface, with its prefix length.
public struct InterfaceAddress: Sendable, Hashable, CustomStringConvertible {
    public var address: IPAddress
    public var prefixLength: Int
    public var description: String { "\(address)/\(prefixLength)" }
}

/// RFC 2863 operational state (IFLA_OPERSTATE), as `ip link` prints it.
public enum OperationalState: String, Sendable, Equatable {
    case unknown = "UNKNOWN"
    case notPresent = "NOTPRESENT"
    case down = "DOWN"
    case lowerLayerDown = "LOWERLAYERDOWN"
    case testing = "TESTING"
    case dormant = "DORMANT"
    case up = "UP"

    /// Maps the kernel's IF_OPER_* value; values newer than this code read as `unknown`.
    init(kernelValue: UInt8) {
        switch kernelValue {
        case 1: self = .notPresent
        case 2: self = .down
        case 3: self = .lowerLayerDown
        case 4: self = .testing
        case 5: self = .dormant
        case 6: self = .up
        default: self = .unknown
        }
    }
}
