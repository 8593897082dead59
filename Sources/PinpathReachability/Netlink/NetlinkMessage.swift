import CNetlink
import Glibc

/// One rtnetlink message, reduced to what the monitor needs. Messages are triggers: the monitor keeps links
/// and addresses from them, and asks the kernel again about everything routing-related.
enum NetlinkMessage {
    case link(LinkRecord)
    case linkRemoved(index: Int, name: String)
    /// An AF_INET6 link message (IPv6 protocol state such as RA flags): a trigger only.
    case linkProtocolInfo
    case address(AddressRecord)
    case addressRemoved(AddressRecord.Key)
    case route(added: Bool, interfaceIndex: Int?)
    case rule
    case other

    /// Parses the message libnl received; called from inside `nl_recvmsgs`, where `message` is valid.
    static func parse(_ message: OpaquePointer) -> NetlinkMessage {
        let type = Int32(nlmsg_hdr(message).pointee.nlmsg_type)
        var parsed = NetlinkMessage.other
        switch type {
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK), Int32(RTM_NEWADDR), Int32(RTM_DELADDR),
            Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            withUnsafeMutablePointer(to: &parsed) { slot in
                _ = nl_msg_parse(
                    message,
                    { object, slot in
                        guard let object, let slot else { return }
                        slot.assumingMemoryBound(to: NetlinkMessage.self).pointee = NetlinkMessage(object: object)
                    }, slot)
            }
            if case .link(let link) = parsed, type == Int32(RTM_DELLINK) {
                return .linkRemoved(index: link.index, name: link.name)
            }
            if case .address(let address) = parsed, type == Int32(RTM_DELADDR) {
                return .addressRemoved(address.key)
            }
            if case .route(_, let index) = parsed { return .route(added: type == Int32(RTM_NEWROUTE), interfaceIndex: index) }
            return parsed
        case Int32(RTM_NEWRULE), Int32(RTM_DELRULE):
            return .rule
        default:
            return .other
        }
    }

    /// Reads a libnl `rtnl_link`, `rtnl_addr` or `rtnl_route` object (told apart by its type name).
    private init(object: OpaquePointer) {
        switch String(cString: nl_object_get_type(object)) {
        case "route/link":
            guard rtnl_link_get_family(object) == AF_UNSPEC else {
                self = .linkProtocolInfo
                return
            }
            let lower = rtnl_link_get_link(object)
            let master = rtnl_link_get_master(object)
            self = .link(
                LinkRecord(
                    index: Int(rtnl_link_get_ifindex(object)),
                    name: rtnl_link_get_name(object).map { String(cString: $0) } ?? "",
                    flags: rtnl_link_get_flags(object),
                    operationalState: OperationalState(kernelValue: rtnl_link_get_operstate(object)),
                    mtu: Int(rtnl_link_get_mtu(object)),
                    lowerIndex: lower > 0 ? Int(lower) : nil,
                    masterIndex: master > 0 ? Int(master) : nil,
                    kindFacts: LinkKindFacts(
                        infoKind: rtnl_link_get_type(object).map { String(cString: $0) },
                        hardwareType: UInt32(rtnl_link_get_arptype(object)), deviceType: nil,
                        hasWirelessPhy: false)))
        case "route/addr":
            guard let local = rtnl_addr_get_local(object), let address = IPAddress(netlinkAddress: local) else {
                self = .other
                return
            }
            self = .address(
                AddressRecord(
                    key: .init(
                        interfaceIndex: Int(rtnl_addr_get_ifindex(object)), address: address,
                        prefixLength: Int(rtnl_addr_get_prefixlen(object))),
                    flags: UInt32(rtnl_addr_get_flags(object))))
        case "route/route":
            let nexthops = rtnl_route_get_nnexthops(object)
            let index = nexthops > 0 ? rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(object, 0)) : 0
            self = .route(added: true, interfaceIndex: index > 0 ? Int(index) : nil)
        default:
            self = .other
        }
    }
}

extension IPAddress {
    /// Copies a libnl `nl_addr` holding an IPv4 or IPv6 address.
    init?(netlinkAddress: OpaquePointer) {
        let length = Int(nl_addr_get_len(netlinkAddress))
        guard let raw = nl_addr_get_binary_addr(netlinkAddress), length == 4 || length == 16 else { return nil }
        self.init(bytes: UnsafeRawBufferPointer(start: raw, count: length))
    }
}
