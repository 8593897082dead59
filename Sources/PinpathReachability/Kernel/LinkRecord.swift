/// A link as read from an RTM_NEWLINK message or dump.
struct LinkRecord: Equatable {
    var index: Int
    var name: String
    var flags: UInt32
    var operationalState: OperationalState
    var mtu: Int
    /// IFLA_LINK: the lower device of a stacked link (VLAN, macvlan), or the peer of a veth.
    var lowerIndex: Int?
    /// IFLA_MASTER: the bond or bridge this link is a port of.
    var masterIndex: Int?
    var kindFacts: LinkKindFacts

    var isAdminUp: Bool { flags & 0x1 != 0 }  // IFF_UP
    var hasCarrier: Bool { PinpathReachability.hasCarrier(operationalState: operationalState, flags: flags) }
}
