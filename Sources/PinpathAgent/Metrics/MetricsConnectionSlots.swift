import Glibc
import NIOCore
import Synchronization

/// The metrics listener's connection slots, shared so that clients holding connections cannot starve a scraper.
///
/// At most ``Limits/capacity`` connections are open, at most ``Limits/perPeer`` of them from one peer: a local
/// user (a Unix socket's `SO_PEERCRED`, or for TCP from this host the owner of the client's socket), else an IPv4
/// address or an IPv6 /64. A connection that would pass either limit takes the slot of the one whose client has
/// made no progress for longest (see ``MetricsSlotTable``): a slow or hostile client, whether it holds its request
/// back or does not take its answer, loses its slots to a scraper, whatever addresses it connects from.
///
/// A connection whose request is not complete ``Limits/requestTimeout`` after it was accepted is closed, and every
/// connection ``Limits/lifetime`` after it was accepted whatever it sends (a read timeout alone would be reset by
/// one byte every few seconds). Answers close their connection, so no connection sits idle between requests.
/// A `/probe` connection holds no slot and no lifetime only while its probe runs (``handOver(_:)``): then it takes
/// a slot and a lifetime again to deliver its answer (``reclaim(_:)``), so a client that asks and holds the socket
/// open holds no more than any other.
final class MetricsConnectionSlots: Sendable {
    /// The numbers the slots keep to.
    struct Limits: Sendable {
        /// More than a few Prometheus servers and health checkers scraping at once.
        var capacity = 32
        /// A quarter of the slots: a client cannot hold more, and four peers can scrape at once.
        var perPeer = 8
        /// Scrapers send their request as soon as they connect; a slow link still sends a few hundred bytes in time.
        var requestTimeout = TimeAmount.seconds(5)
        /// Enough for a slow scraper to read 10,000 endpoints' metrics.
        var lifetime = TimeAmount.seconds(30)
    }

    let limits: Limits
    private let state: Mutex<State>
    private let owners = ConnectionOwners()

    /// A connection the listener has open: in the slot table, or handed over to its `/probe` probe.
    private struct Connection {
        let channel: any Channel
        let peer: MetricsSlotTable.Peer
        /// Its lifetime's end; suspended while its probe runs.
        var lifetime: Scheduled<Void>?
    }

    private struct State {
        var table: MetricsSlotTable
        var holding: [ObjectIdentifier: Connection] = [:]
        var handedOver: [ObjectIdentifier: Connection] = [:]
    }

    init(_ limits: Limits = Limits()) {
        self.limits = limits
        state = Mutex(State(table: MetricsSlotTable(capacity: limits.capacity, perPeer: limits.perPeer)))
    }

    /// Gives `channel` a slot, resetting the connection whose slot it takes, and schedules its deadlines.
    func admit(_ channel: any Channel, peer: MetricsSlotTable.Peer) {
        let id = ObjectIdentifier(channel)
        let lifetime = scheduleLifetime(channel)
        let evicted = state.withLock { state -> Connection? in
            let evicting = state.table.admit(id, peer: peer, now: .now)
            state.holding[id] = Connection(channel: channel, peer: peer, lifetime: lifetime)
            return evicting.flatMap { state.holding.removeValue(forKey: $0) }
        }
        if let evicted { Self.evict(evicted) }
        let requestDeadline = channel.eventLoop.scheduleTask(in: limits.requestTimeout) {
            if self.isAwaitingRequest(channel) { channel.close(promise: nil) }
        }
        channel.closeFuture.whenComplete { _ in
            // A closed connection is not kept for its deadlines: a client opening hundreds a second would
            // otherwise keep thousands of them alive.
            self.release(channel)?.cancel()
            requestDeadline.cancel()
        }
    }

    /// The whole request of `channel` was read.
    func requestReceived(_ channel: any Channel) {
        state.withLock { $0.table.requestReceived(ObjectIdentifier(channel), now: .now) }
    }

    /// `channel` waits on a `/probe` probe, not on its client: it gives up its slot, which a newcomer could
    /// otherwise take from it (a Prometheus scraping many targets at once holds more connections than a peer's
    /// share), and its lifetime stops running: the route's in-flight limit bounds such connections, and the probe's
    /// own timeout (the module's, or the scraper's deadline, however long) ends each. ``reclaim(_:)`` when the
    /// probe has returned.
    func handOver(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let lifetime = state.withLock { state -> Scheduled<Void>? in
            guard let connection = state.holding[id], connection.channel === channel else { return nil }
            state.holding[id] = nil
            state.table.release(id)
            state.handedOver[id] = Connection(channel: channel, peer: connection.peer, lifetime: nil)
            return connection.lifetime
        }
        lifetime?.cancel()
    }

    /// The probe of `channel` returned: the connection waits on its client again to take the answer, so it takes a
    /// slot as a newcomer does (the stalest connection of its peer, or of the largest peer, loses its own) with a
    /// whole lifetime to be read in; a client that asks and never reads or closes holds no more than any other.
    func reclaim(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let lifetime = scheduleLifetime(channel)
        let evicted = state.withLock { state -> Connection?? in
            guard let connection = state.handedOver[id], connection.channel === channel else { return .none }
            state.handedOver[id] = nil
            let evicting = state.table.admit(id, peer: connection.peer, now: .now)
            state.table.requestReceived(id, now: .now)
            state.holding[id] = Connection(channel: channel, peer: connection.peer, lifetime: lifetime)
            return .some(evicting.flatMap { state.holding.removeValue(forKey: $0) })
        }
        guard let evicted else { return lifetime.cancel() }  // closed meanwhile
        if let evicted { Self.evict(evicted) }
    }

    /// The client of `channel` took part of its answer.
    func progressed(_ channel: any Channel) {
        state.withLock { $0.table.progressed(ObjectIdentifier(channel), now: .now) }
    }

    /// Resets a connection whose slot a newcomer took; its lifetime is not kept waiting for it.
    private static func evict(_ connection: Connection) {
        connection.lifetime?.cancel()
        reset(connection.channel)
    }

    private func scheduleLifetime(_ channel: any Channel) -> Scheduled<Void> {
        channel.eventLoop.scheduleTask(in: limits.lifetime) { Self.reset(channel) }
    }

    private func isAwaitingRequest(_ channel: any Channel) -> Bool {
        state.withLock { $0.table.phase(of: ObjectIdentifier(channel)) == .awaitingRequest }
    }

    /// Forgets `channel`, freeing its slot if it holds one.
    /// - Returns: its lifetime's end, for the caller to cancel.
    private func release(_ channel: any Channel) -> Scheduled<Void>? {
        let id = ObjectIdentifier(channel)
        return state.withLock { state -> Scheduled<Void>? in
            // A connection evicted for another has no slot left; the identifier may by now be a newer channel's.
            if let connection = state.handedOver[id], connection.channel === channel {
                state.handedOver[id] = nil
                return nil
            }
            guard let connection = state.holding[id], connection.channel === channel else { return nil }
            state.holding[id] = nil
            state.table.release(id)
            return connection.lifetime
        }
    }

    /// Closes a connection the listener gives up on with a reset (`SO_LINGER` 0): the answer the client did not
    /// take is dropped with the socket. A plain close would leave it to the kernel, which keeps the socket and its
    /// unsent bytes, probing the client's closed window for minutes, for every connection given up.
    static func reset(_ channel: any Channel) {
        guard let provider = channel as? any SocketOptionProvider else { return channel.close(promise: nil) }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Who is at the other end of `channel`: for a Unix socket the uid of the process that connected
    /// (`SO_PEERCRED`, which the kernel fills in at `connect`: a client cannot choose it); for TCP the user that
    /// opened the client's socket when it is one of this host's, else its address (see ``MetricsSlotTable/Peer``).
    func peer(of channel: any Channel) -> EventLoopFuture<MetricsSlotTable.Peer> {
        if let client = channel.remoteAddress, let server = channel.localAddress, client.ipAddress != nil {
            let peer: MetricsSlotTable.Peer
            switch owners.owner(client: client, server: server) {
            case .user(let uid): peer = .user(uid)
            case .closed: peer = .local
            case .elsewhere, .unavailable: peer = MetricsSlotTable.Peer(address: client)
            }
            return channel.eventLoop.makeSucceededFuture(peer)
        }
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(.unknown)
        }
        // `struct ucred` (pid, uid, gid) is only declared under _GNU_SOURCE, which Swift's Glibc module does not
        // set; a tuple of the same three fields has C's layout.
        let credentials: EventLoopFuture<(pid: pid_t, uid: uid_t, gid: gid_t)> = provider.unsafeGetSocketOption(
            level: .socket, name: NIOBSDSocket.Option(rawValue: SO_PEERCRED))
        // Peers that cannot be told apart share one share.
        return credentials.map { MetricsSlotTable.Peer.user($0.uid) }.recover { _ in .unknown }
    }
}

extension MetricsSlotTable.Peer {
    /// The peer of a TCP client known by its address alone: loopback addresses (127.0.0.0/8, `::1`, and both
    /// mapped into IPv6) are all this host's, whose users could not be told apart; an IPv4 address is itself (also
    /// when mapped into IPv6 on a dual-stack listener); an IPv6 address counts by its /64.
    init(address: SocketAddress) {
        switch address {
        case .v4(let v4):
            let bytes = withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }
            self = Self(ipv4: bytes)
        case .v6(let v6):
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            self = Self(ipv6: bytes)
        default:
            self = .unknown
        }
    }

    /// From the 4 bytes of an IPv4 address, in network order.
    init(ipv4 bytes: [UInt8]) {
        self = bytes[0] == 127 ? .local : .address(bytes.map(String.init).joined(separator: "."))
    }

    /// From the 16 bytes of an IPv6 address, in network order.
    init(ipv6 bytes: [UInt8]) {
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            self = Self(ipv4: Array(bytes[12...]))
        } else if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 {
            self = .local
        } else {
            let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            self = .address(groups.joined(separator: ":") + "::/64")
        }
    }
}
