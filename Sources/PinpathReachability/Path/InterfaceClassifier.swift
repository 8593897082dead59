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
