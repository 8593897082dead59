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

    /// Reads the few fields the monitor keeps straight from the message's bytes: libnl's `nl_msg_parse`
    /// would build a whole link, address or route object (every attribute, allocated) per message.
    /// `header` must be followed by `nlmsg_len` readable bytes.
    init(_ header: UnsafePointer<nlmsghdr>) {
        let headerSize = MemoryLayout<nlmsghdr>.size
        let payload = UnsafeRawBufferPointer(
            start: UnsafeRawPointer(header) + headerSize, count: max(0, Int(header.pointee.nlmsg_len) - headerSize))
        switch Int32(header.pointee.nlmsg_type) {
        case Int32(RTM_NEWLINK), Int32(RTM_DELLINK):
            guard let link = Self.link(payload) else {
                self = payload.count >= MemoryLayout<ifinfomsg>.size ? .linkProtocolInfo : .other
                return
            }
            self = header.pointee.nlmsg_type == RTM_DELLINK ? .linkRemoved(index: link.index, name: link.name) : .link(link)
        case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
            guard let address = Self.address(payload) else {
                self = .other
                return
            }
            self = header.pointee.nlmsg_type == RTM_DELADDR ? .addressRemoved(address.key) : .address(address)
        case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
            guard payload.count >= MemoryLayout<rtmsg>.size else {
                self = .other
                return
            }
            self = .route(added: header.pointee.nlmsg_type == RTM_NEWROUTE, interfaceIndex: Self.routeInterface(payload))
        case Int32(RTM_NEWRULE), Int32(RTM_DELRULE):
            self = .rule
        default:
            self = .other
        }
    }

    /// An AF_UNSPEC link message; `nil` for a short one or another family's (AF_INET6 protocol state).
    private static func link(_ payload: UnsafeRawBufferPointer) -> LinkRecord? {
        guard payload.count >= MemoryLayout<ifinfomsg>.size else { return nil }
        let message = payload.loadUnaligned(as: ifinfomsg.self)
        guard message.ifi_family == AF_UNSPEC else { return nil }
        var link = LinkRecord(
            index: Int(message.ifi_index), name: "", flags: message.ifi_flags, operationalState: .unknown, mtu: 0,
            lowerIndex: nil, masterIndex: nil,
            kindFacts: LinkKindFacts(infoKind: nil, hardwareType: UInt32(message.ifi_type), deviceType: nil, hasWirelessPhy: false))
        NetlinkAttributes.forEach(in: UnsafeRawBufferPointer(rebasing: payload[MemoryLayout<ifinfomsg>.size...])) { type, value in
            switch Int(type) {
            case Int(IFLA_IFNAME): link.name = string(value)
            case Int(IFLA_MTU): link.mtu = Int(uint32(value) ?? 0)
            case Int(IFLA_OPERSTATE): if let state = value.first { link.operationalState = OperationalState(kernelValue: state) }
            case Int(IFLA_LINK): link.lowerIndex = uint32(value).flatMap { $0 > 0 ? Int($0) : nil }
            case Int(IFLA_MASTER): link.masterIndex = uint32(value).flatMap { $0 > 0 ? Int($0) : nil }
            case Int(IFLA_LINKINFO):
                NetlinkAttributes.forEach(in: value) { type, value in
                    if Int(type) == Int(IFLA_INFO_KIND) { link.kindFacts.infoKind = string(value) }
                }
            default: break
            }
        }
        return link
    }

    /// The interface's own address: IFA_LOCAL, or IFA_ADDRESS when there is no IFA_LOCAL (IPv6; on a
    /// point-to-point IPv4 link IFA_ADDRESS is the peer's). The 32-bit IFA_FLAGS, when present, holds every flag.
    private static func address(_ payload: UnsafeRawBufferPointer) -> AddressRecord? {
        guard payload.count >= MemoryLayout<ifaddrmsg>.size else { return nil }
        let message = payload.loadUnaligned(as: ifaddrmsg.self)
        var local: IPAddress?
        var address: IPAddress?
        var flags = UInt32(message.ifa_flags)
        NetlinkAttributes.forEach(in: UnsafeRawBufferPointer(rebasing: payload[MemoryLayout<ifaddrmsg>.size...])) { type, value in
            switch Int(type) {
            case Int(IFA_LOCAL): local = IPAddress(bytes: value)
            case Int(IFA_ADDRESS): address = IPAddress(bytes: value)
            case Int(IFA_FLAGS): flags = uint32(value) ?? flags
            default: break
            }
        }
        guard let own = local ?? address else { return nil }
        return AddressRecord(
            key: .init(interfaceIndex: Int(message.ifa_index), address: own, prefixLength: Int(message.ifa_prefixlen)),
            flags: flags)
    }

    /// The route's (first) outgoing interface: RTA_OIF, or the first hop of RTA_MULTIPATH.
    private static func routeInterface(_ payload: UnsafeRawBufferPointer) -> Int? {
        var index: Int?
        NetlinkAttributes.forEach(in: UnsafeRawBufferPointer(rebasing: payload[MemoryLayout<rtmsg>.size...])) { type, value in
            switch type {
            case UInt16(RTA_OIF.rawValue):
                index = uint32(value).map { Int($0) }
            case UInt16(RTA_MULTIPATH.rawValue):
                if index == nil, value.count >= MemoryLayout<rtnexthop>.size {
                    index = Int(value.loadUnaligned(as: rtnexthop.self).rtnh_ifindex)
                }
            default: break
            }
        }
        return index.flatMap { $0 > 0 ? $0 : nil }
    }

    private static func uint32(_ value: UnsafeRawBufferPointer) -> UInt32? {
        value.count >= 4 ? value.loadUnaligned(as: UInt32.self) : nil
    }

    /// A NUL-terminated string attribute.
    private static func string(_ value: UnsafeRawBufferPointer) -> String {
        String(decoding: value.prefix { $0 != 0 }, as: UTF8.self)
    }
}
