import CNetlink
import CShims
import Glibc

/// Owns one libnl route socket. Not thread-safe: the monitor thread is its only user.
final class NetlinkSocket {
    /// The rtnetlink multicast groups the monitor listens to: links, addresses, routes and policy rules.
    static let monitorGroups: [rtnetlink_groups] = [
        RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE,
        RTNLGRP_IPV4_RULE, RTNLGRP_IPV6_RULE,
    ]

    private let handle: OpaquePointer

    /// Opens and connects a NETLINK_ROUTE socket. Wraps `nl_socket_alloc` and `nl_connect`.
    /// - Parameter groups: multicast groups to join; an event socket also stops checking sequence numbers.
    init(subscribingTo groups: [rtnetlink_groups] = []) throws {
        guard let handle = nl_socket_alloc() else {
            throw ReachabilityError(.netlinkUnavailable, "cannot allocate a netlink socket (out of memory)")
        }
        self.handle = handle
        let connected = nl_connect(handle, NETLINK_ROUTE)
        guard connected == 0 else {
            throw ReachabilityError(
                .netlinkUnavailable, "cannot open a NETLINK_ROUTE socket: \(netlinkErrorDescription(connected))")
        }
        // Events have no sequence numbers, and look-ups match replies to requests themselves (libnl's check
        // drops a look-up's reply, which is not followed by an ACK).
        nl_socket_disable_seq_check(handle)
        if !groups.isEmpty {
            for group in groups {
                let joined = nl_socket_add_membership(handle, Int32(group.rawValue))
                guard joined == 0 else {
                    throw ReachabilityError(
                        .netlinkUnavailable,
                        "cannot join rtnetlink group \(group.rawValue): \(netlinkErrorDescription(joined))")
                }
            }
            _ = nl_socket_set_nonblocking(handle)
        }
    }

    deinit { nl_socket_free(handle) }

    var fileDescriptor: Int32 { nl_socket_get_fd(handle) }

    /// Sets the kernel receive buffer: SO_RCVBUFFORCE (needs CAP_NET_ADMIN, passes rmem_max) when allowed,
    /// SO_RCVBUF otherwise. A big buffer makes overruns rare; they are still handled by a resync.
    func setReceiveBuffer(bytes: Int) {
        var size = Int32(clamping: bytes)
        let length = socklen_t(MemoryLayout<Int32>.size)
        if setsockopt(fileDescriptor, SOL_SOCKET, pinpath_so_rcvbufforce(), &size, length) != 0 {
            _ = setsockopt(fileDescriptor, SOL_SOCKET, SO_RCVBUF, &size, length)
        }
    }

    /// Reads one datagram's messages, parsed. Wraps `nl_recvmsgs_default`.
    /// - Returns: the messages, or the libnl error (`-NLE_AGAIN` when nothing is pending on a non-blocking
    ///   socket, `-NLE_NOMEM` for an ENOBUFS overrun).
    func receive(into messages: inout [NetlinkMessage]) -> Int32 {
        withUnsafeMutablePointer(to: &messages) { sink in
            _ = nl_socket_modify_cb(handle, NL_CB_VALID, NL_CB_CUSTOM, { message, sink in
                guard let message, let sink else { return Int32(NL_OK.rawValue) }
                sink.assumingMemoryBound(to: [NetlinkMessage].self).pointee.append(NetlinkMessage.parse(message))
                return Int32(NL_OK.rawValue)
            }, sink)
            return nl_recvmsgs_default(handle)
        }
    }

    /// Asks the kernel for every link and address (RTM_GETLINK and RTM_GETADDR dumps). A dump that the
    /// kernel marks inconsistent (NLM_F_DUMP_INTR: the table changed while it was read) is read again.
    func dumpState(attempts: Int = 5) throws -> KernelState {
        var lastError: Int32 = 0
        for _ in 0..<attempts {
            var messages: [NetlinkMessage] = []
            lastError = dump(RTM_GETLINK, into: &messages)
            if lastError >= 0 { lastError = dump(RTM_GETADDR, into: &messages) }
            if lastError == -Int32(NLE_DUMP_INTR) { continue }
            guard lastError >= 0 else { break }
            var links: [LinkRecord] = [], addresses: [AddressRecord] = []
            for message in messages {
                switch message {
                case .link(let link): links.append(link)
                case .address(let address): addresses.append(address)
                default: break
                }
            }
            return KernelState(links: links, addresses: addresses)
        }
        throw ReachabilityError(.netlinkUnavailable, "netlink dump failed: \(netlinkErrorDescription(lastError))")
    }

    private func dump(_ type: Int, into messages: inout [NetlinkMessage]) -> Int32 {
        let sent = nl_rtgen_request(handle, Int32(type), AF_UNSPEC, Int32(NLM_F_DUMP))
        return sent < 0 ? sent : receive(into: &messages)
    }

    /// Asks the kernel how it would route a packet to `destination` (RTM_GETROUTE), honouring policy rules,
    /// extra tables and VPN routes. `rtnl_route_lookup` is not used because libnl folds ENETUNREACH and
    /// EHOSTUNREACH into one error, and those are different answers here.
    func lookUpRoute(to destination: IPAddress) -> RouteAnswer {
        guard let request = nlmsg_alloc_simple(Int32(RTM_GETROUTE), Int32(NLM_F_REQUEST)) else {
            return .failed(errno: ENOMEM)
        }
        defer { nlmsg_free(request) }
        var header = rtmsg()
        header.rtm_family = UInt8(destination.family.addressFamily)
        header.rtm_dst_len = UInt8(destination.bytes.count * 8)
        header.rtm_flags = UInt32(RTM_F_LOOKUP_TABLE)  // report the table that answered (51820), not main
        guard nlmsg_append(request, &header, MemoryLayout<rtmsg>.size, Int32(NLMSG_ALIGNTO)) == 0,
            destination.bytes.withUnsafeBytes({ nla_put(request, Int32(RTA_DST.rawValue), Int32($0.count), $0.baseAddress) }) == 0,
            nl_send_auto(handle, request) >= 0
        else { return .failed(errno: EIO) }

        var outcome = LookupOutcome(sequence: nlmsg_hdr(request).pointee.nlmsg_seq)
        withUnsafeMutablePointer(to: &outcome) { sink in
            _ = nl_socket_modify_cb(handle, NL_CB_VALID, NL_CB_CUSTOM, { message, sink in
                guard let message, let sink else { return Int32(NL_OK.rawValue) }
                let outcome = sink.assumingMemoryBound(to: LookupOutcome.self)
                guard nlmsg_hdr(message).pointee.nlmsg_seq == outcome.pointee.sequence else { return Int32(NL_SKIP.rawValue) }
                _ = nl_msg_parse(message, { object, sink in
                    guard let object, let sink else { return }
                    sink.assumingMemoryBound(to: LookupOutcome.self).pointee.answer = RouteAnswer(route: object)
                }, sink)
                return Int32(NL_OK.rawValue)
            }, sink)
            _ = nl_socket_modify_err_cb(handle, NL_CB_CUSTOM, { _, error, sink in
                guard let error, let sink else { return Int32(NL_STOP.rawValue) }
                let outcome = sink.assumingMemoryBound(to: LookupOutcome.self)
                if error.pointee.msg.nlmsg_seq == outcome.pointee.sequence { outcome.pointee.errno = -error.pointee.error }
                return Int32(NL_STOP.rawValue)
            }, sink)
            // Each request gets one reply datagram; a stray one (never seen, but cheap to allow) is skipped.
            for _ in 0..<4 where sink.pointee.answer == nil && sink.pointee.errno == nil {
                guard nl_recvmsgs_default(handle) >= 0 || sink.pointee.errno != nil else { break }
            }
        }
        if let answer = outcome.answer { return answer }
        return .failed(errno: outcome.errno ?? EIO)
    }

    private struct LookupOutcome {
        var sequence: UInt32
        var answer: RouteAnswer?
        var errno: Int32?
    }
}

/// The kernel's answer to a route look-up.
enum RouteAnswer: Equatable {
    case route(type: UInt8, interfaceIndex: Int?, gateway: IPAddress?, source: IPAddress?, table: UInt32)
    case failed(errno: Int32)

    init(route: OpaquePointer) {
        var index: Int?, gateway: IPAddress?
        if rtnl_route_get_nnexthops(route) > 0, let hop = rtnl_route_nexthop_n(route, 0) {
            let oif = rtnl_route_nh_get_ifindex(hop)
            index = oif > 0 ? Int(oif) : nil
            gateway = rtnl_route_nh_get_gateway(hop).flatMap(IPAddress.init(netlinkAddress:))
        }
        self = .route(
            type: UInt8(rtnl_route_get_type(route)), interfaceIndex: index, gateway: gateway,
            source: rtnl_route_get_pref_src(route).flatMap(IPAddress.init(netlinkAddress:)),
            table: rtnl_route_get_table(route))
    }
}

/// libnl's text for one of its (negative) error codes.
func netlinkErrorDescription(_ code: Int32) -> String {
    String(cString: nl_geterror(code))
}
