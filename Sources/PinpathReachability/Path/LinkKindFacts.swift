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
