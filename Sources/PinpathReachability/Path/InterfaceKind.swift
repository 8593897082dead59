/// What kind of network an interface connects to, as NetworkManager classifies it.
public enum InterfaceKind: String, Sendable, Equatable, CaseIterable, Codable {
    case wired
    case wifi
    case cellular
    case vpn
    case loopback
    case other

    /// Traffic is paid for by volume, as `NWPath.isExpensive`.
    public var isExpensive: Bool { self == .cellular }
}

/// The facts about a link that decide its kind, gathered from netlink and sysfs.
struct LinkKindFacts: Equatable {
    /// IFLA_INFO_KIND (`veth`, `wireguard`, `vlan`, …); `nil` for physical devices.
    var infoKind: String?
    /// ARPHRD_* hardware type.
    var hardwareType: UInt32
    /// `DEVTYPE=` from /sys/class/net/NAME/uevent (`wlan`, `wwan`, `bridge`, …).
    var deviceType: String?
    /// /sys/class/net/NAME/phy80211 exists.
    var hasWirelessPhy: Bool
}

/// The ARPHRD_* values the classifier needs (linux/if_arp.h).
enum HardwareType {
    static let ether: UInt32 = 1
    static let ppp: UInt32 = 512
    static let tunnel: UInt32 = 768  // ipip
    static let tunnel6: UInt32 = 769
    static let loopback: UInt32 = 772
    static let ipGRE: UInt32 = 778
    static let ip6GRE: UInt32 = 823
    static let none: UInt32 = 0xFFFE  // tun, wireguard
    static let rawIP: UInt32 = 519  // wwan modems in raw-IP mode
}

enum InterfaceClassifier {
    private static let vpnKinds: Set<String> = [
        "wireguard", "tun", "tap", "ppp", "xfrm", "vti", "vti6", "gre", "gretap", "ip6gre", "ip6gretap",
        "ipip", "ip6tnl", "sit", "openvpn",
    ]
    /// Stacked devices that take their lower device's kind (a VLAN on Wi-Fi is Wi-Fi).
    private static let stackedKinds: Set<String> = ["vlan", "macvlan", "macvtap", "ipvlan", "ipvtap"]
    /// Aggregates that are wired when a wired port is enslaved to them.
    private static let aggregateKinds: Set<String> = ["bond", "bridge", "team"]

    /// Classifies a link: IFLA_INFO_KIND first, then the hardware type, then sysfs, as NetworkManager does.
    ///
    /// - Parameters:
    ///   - lowerKind: the kind of the lower device (IFLA_LINK) for stacked devices, if known.
    ///   - portKinds: the kinds of the ports enslaved to an aggregate.
    static func kind(of facts: LinkKindFacts, lowerKind: InterfaceKind? = nil, portKinds: [InterfaceKind] = [])
        -> InterfaceKind
    {
        if let infoKind = facts.infoKind {
            if vpnKinds.contains(infoKind) { return .vpn }
            if stackedKinds.contains(infoKind) { return lowerKind ?? .other }
            if aggregateKinds.contains(infoKind) { return portKinds.contains(.wired) ? .wired : .other }
            return .other  // veth, vrf, vxlan, dummy…: virtual, not a network of their own
        }
        switch facts.hardwareType {
        case HardwareType.loopback: return .loopback
        case HardwareType.ppp: return facts.deviceType == "wwan" ? .cellular : .vpn
        case HardwareType.tunnel, HardwareType.tunnel6, HardwareType.ipGRE, HardwareType.ip6GRE, HardwareType.none:
            return facts.deviceType == "wwan" ? .cellular : .vpn
        case HardwareType.rawIP: return .cellular
        default: break
        }
        if facts.deviceType == "wlan" || facts.hasWirelessPhy { return .wifi }
        if facts.deviceType == "wwan" { return .cellular }
        if facts.hardwareType == HardwareType.ether { return .wired }
        return .other
    }
}

/// systemd's `netif_has_carrier`: operstate UP, or UNKNOWN (drivers that do not report it) with
/// IFF_LOWER_UP and IFF_RUNNING set and IFF_DORMANT clear.
func hasCarrier(operationalState: OperationalState, flags: UInt32) -> Bool {
    if operationalState == .up { return true }
    guard operationalState == .unknown else { return false }
    let lowerUp: UInt32 = 0x10000
    let dormant: UInt32 = 0x20000
    let running: UInt32 = 0x40
    return flags & (lowerUp | running) == (lowerUp | running) && flags & dormant == 0
}
