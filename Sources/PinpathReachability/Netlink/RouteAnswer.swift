import CNetlink

/// The kernel's answer to a route look-up.
enum RouteAnswer: Equatable {
    case route(type: UInt8, interfaceIndex: Int?, gateway: IPAddress?, source: IPAddress?, table: UInt32)
    case failed(errno: Int32)

    /// Reads a reply to RTM_GETROUTE: a route, or an error. `nil` for anything else (an ACK).
    init?(reply header: UnsafePointer<nlmsghdr>) {
        let payload = UnsafeRawPointer(header) + MemoryLayout<nlmsghdr>.size
        let payloadLength = Int(header.pointee.nlmsg_len) - MemoryLayout<nlmsghdr>.size
        switch Int32(header.pointee.nlmsg_type) {
        case NLMSG_ERROR:
            guard payloadLength >= MemoryLayout<Int32>.size else { return nil }
            let error = payload.loadUnaligned(as: Int32.self)
            guard error != 0 else { return nil }
            self = .failed(errno: -error)
        case Int32(RTM_NEWROUTE):
            guard payloadLength >= MemoryLayout<rtmsg>.size else { return nil }
            let message = payload.loadUnaligned(as: rtmsg.self)
            var index: Int?
            var gateway: IPAddress?
            var source: IPAddress?
            var table = UInt32(message.rtm_table)
            NetlinkAttributes.forEach(
                in: UnsafeRawBufferPointer(
                    start: payload + MemoryLayout<rtmsg>.size, count: payloadLength - MemoryLayout<rtmsg>.size)
            ) { type, value in
                switch type {
                case UInt16(RTA_OIF.rawValue): index = value.count == 4 ? Int(value.loadUnaligned(as: UInt32.self)) : nil
                case UInt16(RTA_GATEWAY.rawValue): gateway = IPAddress(bytes: value)
                case UInt16(RTA_PREFSRC.rawValue): source = IPAddress(bytes: value)
                case UInt16(RTA_TABLE.rawValue): if value.count == 4 { table = value.loadUnaligned(as: UInt32.self) }
                default: break
                }
            }
            self = .route(type: message.rtm_type, interfaceIndex: index, gateway: gateway, source: source, table: table)
        default:
            return nil
        }
    }
}
