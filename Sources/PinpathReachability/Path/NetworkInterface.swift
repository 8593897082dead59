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
