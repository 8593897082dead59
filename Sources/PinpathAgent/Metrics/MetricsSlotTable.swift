import Glibc

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
