import NIOCore
import NIOPosix
import Synchronization

/// Runs ``ListenerAccess`` for the metrics listener: the request gate every connection passes before its route.
///
/// bcrypt costs 50 to 100 ms at cost 10, so a check never runs on the listener's event loop: it runs on one
/// thread of its own, one check at a time. Credentials that passed are cached (``CredentialCache``), so a scraper
/// pays bcrypt once. The checks waiting are queued by peer (the slots' ``MetricsSlotTable/Peer``: a local user, an
/// IPv4 address, an IPv6 /64) and taken in turn, one from each peer: a peer flooding wrong passwords waits behind
/// itself, and another peer's first check waits for at most one check of each peer ahead of it. A peer has at
/// most ``maximumQueuedChecksPerPeer`` waiting (more get 503), and a check whose connection closed (its client
/// left, or its slot was taken) is dropped unrun. An unknown user costs a bcrypt check too.
final class ListenerGate: Sendable {
    private let access: Mutex<ListenerAccess>
    private let cache = CredentialCache()
    private let pool: NIOThreadPool
    private let queue = Mutex(CheckQueue())
    private let store: MetricsStore

    /// As many as one peer may hold connections: each waits for at most one check.
    static let maximumQueuedChecksPerPeer = MetricsConnectionSlots.Limits().perPeer

    init(_ access: ListenerAccess, store: MetricsStore) {
        self.access = Mutex(access)
        self.store = store
        pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
    }

    /// Takes the access of a reloaded configuration; the cache is emptied when it changed (a removed user or a
    /// changed hash stops passing at once).
    func replace(with new: ListenerAccess) {
        let changed = access.withLock { current in
            defer { current = new }
            return current != new
        }
        if changed { cache.removeAll() }
    }

    var current: ListenerAccess { access.withLock { $0 } }

    /// What the request comes to.
    enum Verdict {
        case allowed
        /// 401: no credentials, or wrong ones.
        case unauthorized
        /// 403 with a one-line reason.
        case refused(String)
        /// 421 with a one-line reason: the request names another host (``ListenerAccess/hostRefusal(_:)``).
        case misdirected(String)
        /// 503: too many checks waiting.
        case busy
    }

    /// Decides a request for `route` carrying `authorization` (the header's value) from `peer`, on `channel`'s
    /// event loop.
    func decide(
        route: String, host: String?, authorization: String?, peer: MetricsSlotTable.Peer, on channel: any Channel
    ) -> EventLoopFuture<Verdict> {
        let access = current
        switch access.requirement(for: route, host: host) {
        case .open: return channel.eventLoop.makeSucceededFuture(.allowed)
        case .refused(let reason): return channel.eventLoop.makeSucceededFuture(.refused(reason))
        case .misdirected(let reason):
            store.listenerAuthFailed(reason: "host")
            return channel.eventLoop.makeSucceededFuture(.misdirected(reason))
        case .credentials: break
        }
        guard let users = access.basicAuth else { return channel.eventLoop.makeSucceededFuture(.allowed) }
        guard let credentials = BasicCredentials(header: authorization) else {
            store.listenerAuthFailed(reason: "missing")
            return channel.eventLoop.makeSucceededFuture(.unauthorized)
        }
        let key = CredentialCache.key(
            user: credentials.user, hash: users.hashes[credentials.user], password: credentials.password)
        if cache.contains(key) { return channel.eventLoop.makeSucceededFuture(.allowed) }
        let promise = channel.eventLoop.makePromise(of: Verdict.self)
        let check = Check(channel: channel, promise: promise) { [self] () -> Verdict in
            guard users.verify(user: credentials.user, password: credentials.password) else {
                store.listenerAuthFailed(reason: "wrong")
                return .unauthorized
            }
            cache.insert(key)
            return .allowed
        }
        let startWorker = queue.withLock { queue -> Bool? in
            guard queue.waiting[peer, default: []].count < Self.maximumQueuedChecksPerPeer else { return nil }
            queue.append(check, from: peer)
            let idle = !queue.working
            queue.working = true
            return idle
        }
        guard let startWorker else {
            promise.succeed(.busy)
            return promise.futureResult
        }
        if startWorker { pool.submit { self.work(unlessThe: $0) } }
        return promise.futureResult
    }

    /// Runs the queued checks, one peer's after another's, until none is left; when the thread has stopped (the
    /// listener is closing), answers them unrun.
    private func work(unlessThe state: NIOThreadPool.WorkItemState) {
        while let check = queue.withLock({ queue -> Check? in
            guard let next = queue.next() else {
                queue.working = false
                return nil
            }
            return next
        }) {
            // The client left (or its slot was taken) while it waited: nobody would read the answer.
            guard state == .active, check.channel.isActive else {
                check.promise.succeed(.unauthorized)
                continue
            }
            check.promise.succeed(check.run())
        }
    }

    /// One credential check waiting, and the connection that asked.
    private struct Check: Sendable {
        let channel: any Channel
        let promise: EventLoopPromise<Verdict>
        let run: @Sendable () -> Verdict
    }

    /// The checks waiting, by peer, and the order in which peers take their turns.
    private struct CheckQueue {
        var waiting: [MetricsSlotTable.Peer: [Check]] = [:]
        /// The peers with checks waiting, the next to be served first.
        var turns: [MetricsSlotTable.Peer] = []
        /// Whether the checking thread is draining the queue.
        var working = false

        mutating func append(_ check: Check, from peer: MetricsSlotTable.Peer) {
            if waiting[peer] == nil { turns.append(peer) }
            waiting[peer, default: []].append(check)
        }

        /// The first check of the peer whose turn it is; that peer goes to the back of the line.
        mutating func next() -> Check? {
            guard !turns.isEmpty else { return nil }
            let peer = turns.removeFirst()
            guard var checks = waiting[peer], !checks.isEmpty else { return nil }
            let check = checks.removeFirst()
            if checks.isEmpty {
                waiting[peer] = nil
            } else {
                waiting[peer] = checks
                turns.append(peer)
            }
            return check
        }
    }

    /// Stops the checking thread.
    func close() async {
        try? await pool.shutdownGracefully()
    }
}
