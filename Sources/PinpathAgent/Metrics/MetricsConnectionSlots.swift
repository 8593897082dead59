import Glibc
import NIOCore
import Synchronization

/// The metrics listener's connection slots, shared so that clients holding connections cannot starve a scraper.
///
/// At most ``Limits/capacity`` connections are open, at most ``Limits/perPeer`` of them from one peer (an IP
/// address; for a Unix socket, the client's uid from `SO_PEERCRED`). A connection that would pass either limit
/// takes the slot of one that keeps the server waiting on its client (a request not complete yet, or an answer the
/// client does not read): from its own peer when that peer is at its share, else from the peer holding the most
/// slots, the one waiting longest. Only when every slot it could take is busy being answered is the newcomer
/// refused. A scraper sends its whole request at once and reads its answer, so it is never the one waiting
/// longest: slow or hostile clients lose their slots to it, whatever addresses they connect from.
///
/// A connection whose request is not complete ``Limits/requestTimeout`` after it was accepted is closed, and every
/// connection ``Limits/lifetime`` after it was accepted whatever it sends (a read timeout alone would be reset by
/// one byte every few seconds). Answers close their connection, so no connection sits idle between requests.
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

    private struct State {
        var table: MetricsSlotTable
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    init(_ limits: Limits = Limits()) {
        self.limits = limits
        state = Mutex(State(table: MetricsSlotTable(capacity: limits.capacity, perPeer: limits.perPeer)))
    }

    /// Gives `channel` a slot, closing the connection whose slot it takes, and schedules its deadlines; `false`
    /// when no slot can be had (the caller closes `channel`).
    func admit(_ channel: any Channel, peer: MetricsSlotTable.Peer) -> Bool {
        let id = ObjectIdentifier(channel)
        enum Outcome {
            case refused
            case admitted(evicted: (any Channel)?)
        }
        let outcome = state.withLock { state -> Outcome in
            guard case .admitted(let evicting) = state.table.admit(id, peer: peer, now: .now) else { return .refused }
            state.channels[id] = channel
            return .admitted(evicted: evicting.flatMap { state.channels.removeValue(forKey: $0) })
        }
        guard case .admitted(let evicted) = outcome else { return false }
        evicted?.close(promise: nil)
        channel.closeFuture.whenComplete { _ in self.release(channel) }
        channel.eventLoop.scheduleTask(in: limits.requestTimeout) {
            if self.isAwaitingRequest(channel) { channel.close(promise: nil) }
        }
        channel.eventLoop.scheduleTask(in: limits.lifetime) { channel.close(promise: nil) }
        return true
    }

    /// The whole request of `channel` was read: it is being answered.
    func requestReceived(_ channel: any Channel) { update(channel, .answering) }

    /// The answer on `channel` waits for its client to read.
    func awaitingReader(_ channel: any Channel) { update(channel, .awaitingReader) }

    /// The answer on `channel` is being written again.
    func answering(_ channel: any Channel) { update(channel, .answering) }

    private func update(_ channel: any Channel, _ phase: MetricsSlotTable.Phase) {
        state.withLock { $0.table.update(ObjectIdentifier(channel), phase, now: .now) }
    }

    private func isAwaitingRequest(_ channel: any Channel) -> Bool {
        state.withLock { $0.table.phase(of: ObjectIdentifier(channel)) == .awaitingRequest }
    }

    private func release(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { state in
            // A connection evicted for another has no slot left; the identifier may by now be a newer channel's.
            guard state.channels[id] === channel else { return }
            state.channels[id] = nil
            state.table.release(id)
        }
    }

    /// Who is at the other end of `channel`: its IP address, or for a Unix socket the uid of the process that
    /// connected (`SO_PEERCRED`, which the kernel fills in at `connect`: a client cannot choose it).
    static func peer(of channel: any Channel) -> EventLoopFuture<MetricsSlotTable.Peer> {
        if let address = channel.remoteAddress?.ipAddress {
            return channel.eventLoop.makeSucceededFuture(.address(address))
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

/// Which connection holds which slot, and which one gives its slot up to a newcomer: the policy of
/// ``MetricsConnectionSlots``, apart from channels and clocks.
struct MetricsSlotTable {
    /// Who holds a slot: connections from one peer share one share of the slots.
    enum Peer: Hashable, Sendable {
        /// A TCP client, by its address.
        case address(String)
        /// A Unix socket client, by its uid.
        case user(uid_t)
        /// A client whose identity could not be read.
        case unknown
    }

    /// Whether a connection keeps the server waiting on its client.
    enum Phase: Equatable, Sendable {
        /// Accepted, its request not read in full yet: waiting on the client.
        case awaitingRequest
        /// Its answer is being written.
        case answering
        /// Its answer waits for the client to read: waiting on the client.
        case awaitingReader
    }

    /// What ``admit(_:peer:now:)`` decided.
    enum Admission: Equatable {
        /// The connection has a slot; the one named, if any, lost its own to it and must be closed.
        case admitted(evicting: ObjectIdentifier?)
        /// Every slot the connection could take is busy being answered.
        case refused
    }

    private struct Holder {
        let peer: Peer
        var phase: Phase
        var waitingSince: ContinuousClock.Instant
    }

    let capacity: Int
    let perPeer: Int
    private var holders: [ObjectIdentifier: Holder] = [:]
    private var perPeerCount: [Peer: Int] = [:]

    init(capacity: Int, perPeer: Int) {
        self.capacity = capacity
        self.perPeer = perPeer
    }

    /// The number of slots held.
    var count: Int { holders.count }

    /// Gives connection `id` from `peer` a slot, taking one from a connection waiting on its client if the peer is
    /// at its share or every slot is held.
    mutating func admit(_ id: ObjectIdentifier, peer: Peer, now: ContinuousClock.Instant) -> Admission {
        var victim: ObjectIdentifier?
        if perPeerCount[peer, default: 0] >= perPeer {
            victim = longestWaiting { $0.peer == peer }
            if victim == nil { return .refused }
        } else if holders.count >= capacity {
            // From the peer holding the most slots: one client with many connections loses them before a
            // scraper loses its one.
            let waiting = holders.values.filter { $0.phase != .answering }
            guard let largest = waiting.map({ perPeerCount[$0.peer, default: 0] }).max() else { return .refused }
            victim = longestWaiting { perPeerCount[$0.peer, default: 0] == largest }
        }
        if let victim { release(victim) }
        holders[id] = Holder(peer: peer, phase: .awaitingRequest, waitingSince: now)
        perPeerCount[peer, default: 0] += 1
        return .admitted(evicting: victim)
    }

    /// Moves `id` to `phase`; a phase that waits on the client starts its wait `now`.
    mutating func update(_ id: ObjectIdentifier, _ phase: Phase, now: ContinuousClock.Instant) {
        guard var holder = holders[id], holder.phase != phase else { return }
        holder.phase = phase
        holder.waitingSince = now
        holders[id] = holder
    }

    /// The phase of `id`, or `nil` when it holds no slot.
    func phase(of id: ObjectIdentifier) -> Phase? { holders[id]?.phase }

    /// Frees the slot of `id`, if it holds one.
    mutating func release(_ id: ObjectIdentifier) {
        guard let holder = holders.removeValue(forKey: id) else { return }
        perPeerCount[holder.peer, default: 1] -= 1
        if perPeerCount[holder.peer] == 0 { perPeerCount[holder.peer] = nil }
    }

    /// Of the connections waiting on their client that `isCandidate` accepts, the one waiting longest.
    private func longestWaiting(where isCandidate: (Holder) -> Bool) -> ObjectIdentifier? {
        holders.filter { $0.value.phase != .answering && isCandidate($0.value) }.min { $0.value.waitingSince < $1.value.waitingSince }?.key
    }
}
