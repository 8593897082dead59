import PinpathSupport
import Synchronization

/// The shared client `SSL_CTX`s of one owner (a `Session`): one per distinct ``TLSClientTerms``, built on first
/// use and kept until the terms' files change or ``removeAll()``. OpenSSL 3.0 caches the algorithms it fetches
/// in a context, so a handshake on a shared context costs far less CPU than one on a new context
/// (`benchmarks/openssl-floor.c`). Thread-safe.
///
/// The cache's lock is held only to look up and to insert, never while a file is looked at or read or a context
/// is built: a client certificate on a file system that does not answer, or a FIFO on its path, stalls only the
/// checks that use that certificate, never those of other terms.
package final class TLSClientContexts: Sendable {
    /// A built context, with the identities its client certificate and key files had before it was built.
    private struct Entry {
        let files: [FileIdentity]
        let context: TLSClientContext
    }

    private struct State {
        var entries: [TLSClientTerms: Entry] = [:]
        /// The builds under way on the blocking pool for ``context(for:deadline:)``: callers asking for the same
        /// terms meanwhile wait for that one instead of starting another.
        var building: [TLSClientTerms: TLSClientContextBuild] = [:]
        /// How many times ``removeAll()`` has run: a build that began before the last one is not kept.
        var generation = 0
    }

    private let state = Mutex(State())
    private let built = Atomic<Int>(0)
    /// How a context is built: ``TLSClientContext/init(terms:)``, or in tests a build that can be held.
    private let makeContext: @Sendable (TLSClientTerms) throws(SecurityError) -> TLSClientContext

    package convenience init() {
        self.init { terms throws(SecurityError) in try TLSClientContext(terms: terms) }
    }

    /// A cache whose contexts `makeContext` builds: tests hold a build to see who waits for it.
    init(makeContext: @escaping @Sendable (TLSClientTerms) throws(SecurityError) -> TLSClientContext) {
        self.makeContext = makeContext
    }

    /// The context for `terms`, built on first use, on the calling thread: it looks at and may read the client
    /// certificate's files, so it can block as long as they do. Tasks call ``context(for:deadline:)``.
    ///
    /// A client certificate is keyed by its files' paths and by what they are now (device, inode, size and
    /// times, read with `stat` on every call): a certificate or key rotated in place builds a new context,
    /// which replaces the old one here (handshakes still on the old one keep it alive). The files are looked
    /// at before they are read, so a rotation during the build is seen on the next call and builds again. Two
    /// callers asking at once for terms not yet built may both build; the first context kept is the one shared.
    /// - Throws: ``SecurityError`` naming the file that cannot be read or used (see
    ///   ``TLSClientContext/init(terms:)``); nothing is kept, so the next call tries again.
    package func context(for terms: TLSClientTerms) throws(SecurityError) -> TLSClientContext {
        let files = try Self.identities(of: terms)
        let (cached, generation) = state.withLock { ($0.entries[terms], $0.generation) }
        if let cached, cached.files == files { return cached.context }
        let context = try makeContext(terms)
        built.add(1, ordering: .relaxed)
        return state.withLock { state in
            // Another caller's context for the same files, kept while this one was built, stays the shared one.
            if let entry = state.entries[terms], entry.files == files { return entry.context }
            // Built from files looked at before a reload: used this once, not kept for the checks after it.
            guard state.generation == generation else { return context }
            state.entries[terms] = Entry(files: files, context: context)
            return context
        }
    }

    /// The context for `terms`, as ``context(for:)`` gives it, for a task: what touches the client certificate's
    /// files (the `stat` of every call, the build) runs on ``BlockingPool``, never on a thread of Swift's
    /// concurrency pool, and the wait ends at `deadline`. Terms without a client certificate already built are
    /// answered at once. Tasks asking for the same terms while a build or look-up is under way wait for that one.
    /// - Throws: ``SecurityError``: the errors of ``context(for:)``; `timedOut` naming the files when `deadline`
    ///   passes first (the work goes on on its pool thread and its context is kept for the next call);
    ///   `cancelled` when the task is cancelled.
    package func context(for terms: TLSClientTerms, deadline: ContinuousClock.Instant) async throws(SecurityError)
        -> TLSClientContext
    {
        enum Next {
            case cached(TLSClientContext)
            case wait(TLSClientContextBuild, starts: Bool)
        }
        let next = state.withLock { state -> Next in
            // Terms without files have nothing to look at again: a context built is the answer.
            if terms.clientCertificate == nil, let entry = state.entries[terms] { return .cached(entry.context) }
            if let build = state.building[terms] { return .wait(build, starts: false) }
            let build = TLSClientContextBuild()
            state.building[terms] = build
            return .wait(build, starts: true)
        }
        let build: TLSClientContextBuild
        switch next {
        case .cached(let context): return context
        case .wait(let underWay, starts: false): build = underWay
        case .wait(let new, starts: true):
            build = new
            BlockingPool.shared.execute { [self] in
                let result = Result { () throws(SecurityError) -> TLSClientContext in try context(for: terms) }
                state.withLock { _ = $0.building.removeValue(forKey: terms) }
                new.finish(result)
            }
        }
        switch await build.result(until: deadline) {
        case .finished(let result): return try result.get()
        case .cancelled: throw SecurityError(.cancelled, "cancelled while waiting for the TLS context of \(terms)")
        case .deadlinePassed:
            throw SecurityError(
                .timedOut,
                "\(terms): not read and loaded before the check's deadline (does its file system answer?)")
        }
    }

    /// Drops every context (a reload): the next handshakes build new ones; live handshakes keep theirs.
    package func removeAll() {
        state.withLock { state in
            state.entries.removeAll()
            state.generation += 1
        }
    }

    /// How many contexts this cache has built since it was made: what the sharing saves is visible in tests
    /// and benchmarks.
    package var contextsBuilt: Int { built.load(ordering: .relaxed) }

    /// How many contexts it holds now.
    package var count: Int { state.withLock { $0.entries.count } }

    /// The identities of the client certificate and key files `terms` names, certificate first.
    private static func identities(of terms: TLSClientTerms) throws(SecurityError) -> [FileIdentity] {
        guard let files = terms.clientCertificate else { return [] }
        var identities: [FileIdentity] = []
        for (path, what, code) in [
            (files.certificatePath, "client certificate", SecurityError.Code.unreadableFile),
            files.keyPath.map { ($0, "client key", SecurityError.Code.unusableClientKey) },
        ].compactMap({ $0 }) {
            do {
                identities.append(try FileIdentity(path: path))
            } catch {
                throw ClientIdentity.unreadable(path, what, code: code, error)
            }
        }
        return identities
    }
}
