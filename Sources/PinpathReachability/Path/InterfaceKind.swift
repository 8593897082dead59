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
