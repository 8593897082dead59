import CLinuxShims
import CNetlink
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
        // One recvmsg per datagram: libnl's default peeks first to size its buffer, doubling the system calls.
        // 64 KiB holds any datagram the kernel sends (dumps are capped at 32 KiB).
        nl_socket_disable_msg_peek(handle)
        _ = nl_socket_set_msg_buf_size(handle, 65536)
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
            _ = nl_socket_modify_cb(
                handle, NL_CB_VALID, NL_CB_CUSTOM,
                { message, sink in
                    guard let message, let sink else { return Int32(NL_OK.rawValue) }
                    sink.assumingMemoryBound(to: [NetlinkMessage].self).pointee.append(NetlinkMessage(nlmsg_hdr(message)))
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
            discardPending()
            var messages: [NetlinkMessage] = []
            lastError = dump(RTM_GETLINK, into: &messages)
            if lastError >= 0 { lastError = dump(RTM_GETADDR, into: &messages) }
            if lastError == -Int32(NLE_DUMP_INTR) { continue }
            guard lastError >= 0 else { break }
            var links: [LinkRecord] = []
            var addresses: [AddressRecord] = []
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

    /// Reads every event waiting on this (non-blocking, subscribed) socket, in as few system calls as
    /// the kernel allows, and parses each message.
    /// - Returns: `lost` when the kernel dropped messages (ENOBUFS) or one could not be read whole.
    func receiveEvents(into messages: inout [NetlinkMessage], limit: Int) -> (lost: Bool, error: Int32?) {
        while messages.count < limit {
            let outcome = datagrams.receive(from: fileDescriptor) { messages.append(NetlinkMessage($0)) }
            switch outcome {
            case .read(let more): if !more { return (false, nil) }
            case .empty: return (false, nil)
            case .lost: return (true, nil)
            case .failed(let error): return (true, error)
            }
        }
        return (false, nil)
    }

    /// Throws away every datagram waiting on this socket. On the event socket before a resync: a message
    /// queued before the dump but read after it would put back what the dump had already moved past, and if
    /// its successor was the one lost, nothing would correct it. On the request socket before a dump: a
    /// stray reply left by a failed read would otherwise end the dump early.
    func discardPending() {
        for _ in 0..<100_000 {
            switch datagrams.receive(from: fileDescriptor, { _ in }) {
            case .read, .lost: continue
            case .empty, .failed: return
            }
        }
    }

    /// Asks the kernel how it would route a packet to each destination (RTM_GETROUTE), honouring policy
    /// rules, extra tables and VPN routes. All requests go in one datagram and the kernel answers them
    /// before `send` returns, so a whole snapshot costs two or three system calls. `rtnl_route_lookup` is
    /// not used: it asks one at a time and folds ENETUNREACH and EHOSTUNREACH into one error.
    func lookUpRoutes(to destinations: [IPAddress]) -> RouteAnswers {
        var answers: [RouteAnswer] = []
        answers.reserveCapacity(destinations.count)
        // Chunks keep a batch's replies well inside the receive buffer, and fit `answered`'s bits.
        for start in stride(from: 0, to: destinations.count, by: 16) {
            lookUpRoutes(to: destinations[start..<min(start + 16, destinations.count)], appendingTo: &answers)
        }
        return RouteAnswers(destinations: destinations, answers: answers)
    }

    private func lookUpRoutes(to destinations: ArraySlice<IPAddress>, appendingTo answers: inout [RouteAnswer]) {
        let firstSequence = nextSequence
        nextSequence &+= UInt32(destinations.count)
        request.removeAll(keepingCapacity: true)
        for (offset, destination) in destinations.enumerated() {
            RouteRequest.append(destination, sequence: firstSequence &+ UInt32(offset), to: &request)
        }
        let sent = request.withUnsafeBytes { send(fileDescriptor, $0.baseAddress, $0.count, 0) }
        let sendError = sent == request.count ? nil : errno
        let first = answers.count
        answers.append(contentsOf: repeatElement(.failed(errno: sendError ?? EIO), count: destinations.count))
        guard sendError == nil else { return }
        // Bit `offset` is set once the destination at `offset` has its answer.
        var answered: UInt32 = 0
        // The kernel answers inside `send`: every reply is queued by now, so nothing here blocks.
        var pending = destinations.count
        var reads = 0
        while pending > 0, reads <= destinations.count {
            reads += 1
            let outcome = datagrams.receive(from: fileDescriptor) { header in
                let offset = Int(header.pointee.nlmsg_seq &- firstSequence)
                guard offset >= 0, offset < destinations.count, answered & (1 << offset) == 0,
                    let answer = RouteAnswer(reply: header)
                else { return }
                answers[first + offset] = answer
                answered |= 1 << offset
                pending -= 1
            }
            if case .read = outcome { continue }
            break
        }
    }

    /// The request datagram, kept between look-ups so that building one allocates nothing.
    private var request: [UInt8] = []
    private var nextSequence = UInt32.random(in: 1...UInt32.max / 2)
    private lazy var datagrams = DatagramReader(slots: 16, slotSize: 32768)
}

/// Builds RTM_GETROUTE requests by hand: a header, an `rtmsg`, and the RTA_DST attribute.
enum RouteRequest {
    static func append(_ destination: IPAddress, sequence: UInt32, to buffer: inout [UInt8]) {
        let attributeLength = 4 + destination.byteCount
        var header = nlmsghdr()
        header.nlmsg_len = UInt32(MemoryLayout<nlmsghdr>.size + MemoryLayout<rtmsg>.size + attributeLength)
        header.nlmsg_type = UInt16(RTM_GETROUTE)
        header.nlmsg_flags = UInt16(NLM_F_REQUEST)
        header.nlmsg_seq = sequence
        var message = rtmsg()
        message.rtm_family = UInt8(destination.family.addressFamily)
        message.rtm_dst_len = UInt8(destination.byteCount * 8)
        message.rtm_flags = UInt32(RTM_F_LOOKUP_TABLE)  // report the table that answered (51820), not main
        withUnsafeBytes(of: header) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: message) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(attributeLength)) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(RTA_DST.rawValue)) { buffer.append(contentsOf: $0) }
        destination.appendBytes(to: &buffer)  // 4 or 16 bytes: already 4-aligned
    }
}

/// Walks `rtattr` attributes (RTA_OK / RTA_NEXT), as route, link and address messages carry them.
enum NetlinkAttributes {
    static func forEach(in bytes: UnsafeRawBufferPointer, _ body: (UInt16, UnsafeRawBufferPointer) -> Void) {
        var offset = 0
        while offset + 4 <= bytes.count {
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let type = bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 0x3FFF  // drop NLA_F_ flags
            guard length >= 4, offset + length <= bytes.count else { return }
            body(type, UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + length)]))
            offset += (length + 3) & ~3
        }
    }
}

/// libnl's text for one of its (negative) error codes.
func netlinkErrorDescription(_ code: Int32) -> String {
    String(cString: nl_geterror(code))
}
