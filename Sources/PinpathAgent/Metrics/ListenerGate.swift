import NIOCore
import NIOPosix
import Synchronization

/// Runs ``ListenerAccess`` for the metrics listener: the request gate every connection passes before its route.
///
/// bcrypt costs 50 to 100 ms at cost 10, so a check never runs on the listener's event loop: it runs on one
/// thread of its own, one check at a time, at most ``maximumQueuedChecks`` waiting (each connection asks once,
/// and a connection closed while waiting costs nothing). Credentials that passed are cached
/// (``CredentialCache``), so a scraper pays bcrypt once, and a flood of wrong passwords (never cached) waits behind
/// itself while the scraper's cached credentials are answered at once. An unknown user costs a bcrypt check too.
final class ListenerGate: Sendable {
    private let access: Mutex<ListenerAccess>
    private let cache = CredentialCache()
    private let pool: NIOThreadPool
    private let queued = Atomic<Int>(0)
    private let store: MetricsStore

    /// As many as the listener has connections: each waits for at most one check.
    static let maximumQueuedChecks = MetricsConnectionSlots.Limits().capacity

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
        /// 503: too many checks waiting.
        case busy
    }

    /// Decides a request for `route` carrying `authorization` (the header's value), on `channel`'s event loop.
    func decide(route: String, authorization: String?, on channel: any Channel) -> EventLoopFuture<Verdict> {
        let access = current
        switch access.requirement(for: route) {
        case .open: return channel.eventLoop.makeSucceededFuture(.allowed)
        case .refused(let reason): return channel.eventLoop.makeSucceededFuture(.refused(reason))
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
        guard queued.add(1, ordering: .relaxed).newValue <= Self.maximumQueuedChecks else {
            queued.subtract(1, ordering: .relaxed)
            return channel.eventLoop.makeSucceededFuture(.busy)
        }
        return pool.runIfActive(eventLoop: channel.eventLoop) { [self] () -> Verdict in
            defer { queued.subtract(1, ordering: .relaxed) }
            // The client left (or its slot was taken) while it waited: nobody would read the answer.
            guard channel.isActive else { return .unauthorized }
            guard users.verify(user: credentials.user, password: credentials.password) else {
                store.listenerAuthFailed(reason: "wrong")
                return .unauthorized
            }
            cache.insert(key)
            return .allowed
        }
    }

    /// Stops the checking thread.
    func close() async {
        try? await pool.shutdownGracefully()
    }
}
