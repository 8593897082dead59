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
        let requestDeadline = channel.eventLoop.scheduleTask(in: limits.requestTimeout) {
            if self.isAwaitingRequest(channel) { channel.close(promise: nil) }
        }
        let lifetime = channel.eventLoop.scheduleTask(in: limits.lifetime) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in
            self.release(channel)
            // A closed connection is not kept for its deadlines: a client opening hundreds a second would
            // otherwise keep thousands of them alive.
            requestDeadline.cancel()
            lifetime.cancel()
        }
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
