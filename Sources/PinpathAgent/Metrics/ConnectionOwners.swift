import CLinuxShims
import Glibc
import NIOCore
import Synchronization

/// Who opened the client end of a TCP connection made from this host, asked of the kernel's socket table
/// (sock_diag(7), what `ss -e` reads): one question per connection, for that exact connection, answered inside the
/// `send`. A local user can connect from any address of 127.0.0.0/8 or of the host, but only as themselves.
final class ConnectionOwners: Sendable {
    /// What the kernel says of a connection's client end.
    enum Answer: Equatable, Sendable {
        /// An open socket of this network namespace, created by this user.
        case user(uid_t)
        /// A socket of this namespace that no process holds any more (closed, or waiting out TIME_WAIT): the kernel
        /// keeps no trustworthy owner for it (a TIME_WAIT entry says uid 0).
        case closed
        /// No socket of this namespace: the client connected from elsewhere.
        case elsewhere
        /// The kernel could not be asked (sock_diag missing, or netlink refused by a sandbox).
        case unavailable
    }

    /// The NETLINK_SOCK_DIAG socket, or -1; the lock keeps one question and its answer together.
    private let descriptor: Mutex<Int32>
    /// The interface indexes, read at most once a second: a client that closes at once (a flood reconnecting)
    /// is not found, and reading them is a netlink dump of every link.
    private let interfaces = Mutex<(read: ContinuousClock.Instant, indexes: [UInt32])?>(nil)

    init() {
        descriptor = Mutex(socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_SOCK_DIAG))
    }

    deinit {
        descriptor.withLock { if $0 >= 0 { close($0) } }
    }

    /// The owner of the socket whose local end is `client` and whose remote end is `server` (a connection as the
    /// server sees it, the other way round). Sends `SOCK_DIAG_BY_FAMILY` for that one socket, not a dump.
    ///
    /// The kernel's exact lookup does not match a socket bound to a device (`SO_BINDTODEVICE`, which any user may
    /// set since Linux 5.7) unless asked on that device: a local client (a loopback address, or the server's own)
    /// not found is asked for again on each interface, so that binding its socket to `lo` does not make a local
    /// user a stranger with a share of its own.
    func owner(client: SocketAddress, server: SocketAddress) -> Answer {
        guard var request = Self.request(client: client, server: server) else { return .elsewhere }
        let answer = ask(&request)
        guard answer == .elsewhere, Self.isLocal(client: client, server: server) else { return answer }
        for index in interfaceIndexes() {
            request.diag.id.idiag_if = index
            let onDevice = ask(&request)
            if onDevice != .elsewhere { return onDevice }
        }
        return .elsewhere
    }

    /// Whether `client` is this host's own: a loopback address, or the address the server was reached at.
    private static func isLocal(client: SocketAddress, server: SocketAddress) -> Bool {
        guard let address = client.ipAddress else { return false }
        return address == server.ipAddress || MetricsSlotTable.Peer(address: client) == .local
    }

    /// The index of every interface of this network namespace, as read less than a second ago.
    private func interfaceIndexes() -> [UInt32] {
        interfaces.withLock { cached in
            let now = ContinuousClock.now
            if let cached, now - cached.read < .seconds(1) { return cached.indexes }
            let indexes = Self.readInterfaceIndexes()
            cached = (now, indexes)
            return indexes
        }
    }

    /// The index of every interface of this network namespace (`if_nameindex`).
    private static func readInterfaceIndexes() -> [UInt32] {
        guard let list = if_nameindex() else { return [] }
        defer { if_freenameindex(list) }
        var indexes: [UInt32] = []
        var entry = list
        while entry.pointee.if_index != 0 {
            indexes.append(entry.pointee.if_index)
            entry += 1
        }
        return indexes
    }

    /// Sends one question and reads its answer.
    private func ask(_ request: inout Request) -> Answer {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return .unavailable }
            // A reply left behind by an earlier question that failed half-way is skipped by its sequence number.
            let sequence = UInt32.random(in: 1...UInt32.max)
            request.header.nlmsg_seq = sequence
            let sent = withUnsafeBytes(of: &request) { send(descriptor, $0.baseAddress, $0.count, 0) }
            guard sent == MemoryLayout<Request>.size else { return .unavailable }
            var reply = [UInt8](repeating: 0, count: 4096)
            for _ in 0..<4 {
                // The kernel answered inside `send`: nothing here waits.
                let received = reply.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                guard received >= MemoryLayout<nlmsghdr>.size else { return .unavailable }
                let answer = reply.withUnsafeBytes {
                    Self.answer(UnsafeRawBufferPointer(rebasing: $0[..<received]), sequence, request.diag)
                }
                if let answer { return answer }
            }
            return .unavailable
        }
    }

    /// A netlink header and an `inet_diag_req_v2`, laid out as the kernel reads them (both sizes are multiples of 4).
    private struct Request {
        var header = nlmsghdr()
        var diag = inet_diag_req_v2()
    }

    /// The question for one TCP socket, both addresses of one family (IPv4-mapped IPv6 on a dual-stack listener is
    /// looked up by the kernel among IPv4 sockets); nil for a Unix socket.
    private static func request(client: SocketAddress, server: SocketAddress) -> Request? {
        var request = Request()
        request.header.nlmsg_len = UInt32(MemoryLayout<Request>.size)
        request.header.nlmsg_type = UInt16(SOCK_DIAG_BY_FAMILY)
        request.header.nlmsg_flags = UInt16(NLM_F_REQUEST)
        request.diag.sdiag_protocol = UInt8(IPPROTO_TCP)
        // Every state: the answer's own state says whether its owner can be trusted.
        request.diag.idiag_states = UInt32.max
        request.diag.id.idiag_cookie = (UInt32.max, UInt32.max)  // INET_DIAG_NOCOOKIE: any socket of these addresses
        switch (client, server) {
        case (.v4(let client), .v4(let server)):
            request.diag.sdiag_family = UInt8(AF_INET)
            request.diag.id.idiag_sport = client.address.sin_port
            request.diag.id.idiag_dport = server.address.sin_port
            request.diag.id.idiag_src.0 = client.address.sin_addr.s_addr
            request.diag.id.idiag_dst.0 = server.address.sin_addr.s_addr
        case (.v6(let client), .v6(let server)):
            request.diag.sdiag_family = UInt8(AF_INET6)
            request.diag.id.idiag_sport = client.address.sin6_port
            request.diag.id.idiag_dport = server.address.sin6_port
            withUnsafeBytes(of: client.address.sin6_addr) { bytes in
                withUnsafeMutableBytes(of: &request.diag.id.idiag_src) { $0.copyMemory(from: bytes) }
            }
            withUnsafeBytes(of: server.address.sin6_addr) { bytes in
                withUnsafeMutableBytes(of: &request.diag.id.idiag_dst) { $0.copyMemory(from: bytes) }
            }
        default:
            return nil
        }
        return request
    }

    /// The answer in one reply datagram, or nil when it answers another question.
    private static func answer(_ datagram: UnsafeRawBufferPointer, _ sequence: UInt32, _ asked: inet_diag_req_v2) -> Answer? {
        let header = datagram.loadUnaligned(as: nlmsghdr.self)
        guard header.nlmsg_seq == sequence else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: datagram[MemoryLayout<nlmsghdr>.size...])
        switch Int32(header.nlmsg_type) {
        case NLMSG_ERROR:
            guard payload.count >= MemoryLayout<Int32>.size else { return .unavailable }
            // ENOENT: no socket has these addresses here.
            return payload.loadUnaligned(as: Int32.self) == -ENOENT ? .elsewhere : .unavailable
        case Int32(SOCK_DIAG_BY_FAMILY):
            guard payload.count >= MemoryLayout<inet_diag_msg>.size else { return .unavailable }
            let message = payload.loadUnaligned(as: inet_diag_msg.self)
            // The kernel also matches a listening socket on the client's address and port: only the connection's
            // own client end (its peer is the server's address and port) tells who connected.
            guard message.id.idiag_dport == asked.id.idiag_dport, message.id.idiag_sport == asked.id.idiag_sport,
                Self.connectedStates.contains(message.idiag_state)
            else { return .elsewhere }
            // No inode: no process holds the socket (an orphan, or a TIME_WAIT entry whose uid reads 0).
            return message.idiag_inode == 0 ? .closed : .user(message.idiag_uid)
        default:
            return .unavailable
        }
    }

    /// TCP states of a connected socket: not SYN_SENT, TIME_WAIT, CLOSE, LISTEN, nor a request socket's.
    private static let connectedStates: Set<UInt8> = Set(
        [TCP_ESTABLISHED, TCP_FIN_WAIT1, TCP_FIN_WAIT2, TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSING].map { UInt8($0) })
}
