import Glibc

/// Which connection holds which slot, and which one gives its slot up to a newcomer: the policy of
/// ``MetricsConnectionSlots``, apart from channels and clocks.
///
/// Every connection holding a slot is waiting on its client. The listener does its own part of an answer (reading
/// the request, rendering and queuing the pieces the channel takes) within one turn of its single event loop, and
/// a newcomer is admitted in another turn: by then each connection waits for its request, for its client to take
/// the answer queued for it, or for nothing (it is closing). So any slot can be taken, and a newcomer is never
/// refused: it takes the slot of the connection whose client has made no progress for longest, from the
/// newcomer's own peer when that peer is at its share, else from the peer holding the most slots. A scraper sends
/// its request at once and takes its answer as it comes, so it is always among the freshest.
struct MetricsSlotTable {
    /// Who holds a slot: connections from one peer share one share of the slots.
    enum Peer: Hashable, Sendable {
        /// A client on this host, by its user: the uid of a Unix socket client (`SO_PEERCRED`), or of the process
        /// that opened a TCP client socket of this host (sock_diag). A local user connects from any of 127.0.0.0/8
        /// or of the host's addresses, but only as themselves.
        case user(uid_t)
        /// A client on this host whose user could not be read (its socket is already closed, or sock_diag is not
        /// available): all of them share one share, whichever loopback address they use.
        case local
        /// A client elsewhere: its IPv4 address, or the /64 of its IPv6 address (`2001:db8:1:2::/64`), within
        /// which one host picks any address it likes.
        case address(String)
        /// A client whose identity could not be read.
        case unknown
    }

    /// What a connection waits for.
    enum Phase: Equatable, Sendable {
        /// Accepted, its request not read in full yet.
        case awaitingRequest
        /// Its request was read: its client is to take the answer (what is left of it) and go.
        case awaitingReader
    }

    private struct Holder {
        let peer: Peer
        var phase: Phase
        /// When its client last moved it on: its accept, its whole request, the kernel taking a write for it.
        var lastProgress: ContinuousClock.Instant
    }

    let capacity: Int
    let perPeer: Int
    private var holders: [ObjectIdentifier: Holder] = [:]
    private var perPeerCount: [Peer: Int] = [:]

    init(capacity: Int, perPeer: Int) {
        precondition(capacity >= 1 && perPeer >= 1, "the metrics listener needs a slot to give")
        self.capacity = capacity
        self.perPeer = perPeer
    }

    /// The number of slots held.
    var count: Int { holders.count }

    /// Gives connection `id` from `peer` a slot. When the peer is at its share or every slot is held, the slot of
    /// the connection that made no progress for longest is taken: the peer's own, else one of the peer holding
    /// the most slots (a client with many connections loses them before a scraper loses its one).
    /// - Returns: the connection that lost its slot (the caller closes it), if any.
    mutating func admit(_ id: ObjectIdentifier, peer: Peer, now: ContinuousClock.Instant) -> ObjectIdentifier? {
        var victim: ObjectIdentifier?
        if perPeerCount[peer, default: 0] >= perPeer {
            victim = stalest { $0.peer == peer }
        } else if holders.count >= capacity, let largest = perPeerCount.values.max() {
            victim = stalest { perPeerCount[$0.peer, default: 0] == largest }
        }
        if let victim { release(victim) }
        holders[id] = Holder(peer: peer, phase: .awaitingRequest, lastProgress: now)
        perPeerCount[peer, default: 0] += 1
        return victim
    }

    /// The whole request of `id` was read.
    mutating func requestReceived(_ id: ObjectIdentifier, now: ContinuousClock.Instant) {
        holders[id]?.phase = .awaitingReader
        holders[id]?.lastProgress = now
    }

    /// The client of `id` took part of its answer (the kernel took a write whole).
    mutating func progressed(_ id: ObjectIdentifier, now: ContinuousClock.Instant) {
        holders[id]?.lastProgress = now
    }

    /// The phase of `id`, or `nil` when it holds no slot.
    func phase(of id: ObjectIdentifier) -> Phase? { holders[id]?.phase }

    /// Frees the slot of `id`, if it holds one.
    mutating func release(_ id: ObjectIdentifier) {
        guard let holder = holders.removeValue(forKey: id) else { return }
        perPeerCount[holder.peer, default: 1] -= 1
        if perPeerCount[holder.peer] == 0 { perPeerCount[holder.peer] = nil }
    }

    /// Of the connections that `isCandidate` accepts, the one whose client made no progress for longest.
    private func stalest(where isCandidate: (Holder) -> Bool) -> ObjectIdentifier? {
        holders.filter { isCandidate($0.value) }.min { $0.value.lastProgress < $1.value.lastProgress }?.key
    }
}
