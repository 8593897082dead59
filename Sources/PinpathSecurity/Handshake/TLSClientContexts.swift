import Synchronization

/// The shared client `SSL_CTX`s of one owner (a `Session`): one per distinct ``TLSClientTerms``, built on first
/// use and kept until the terms' files change or ``removeAll()``. OpenSSL 3.0 caches the algorithms it fetches
/// in a context, so a handshake on a shared context costs far less CPU than one on a new context
/// (`benchmarks/openssl-floor.c`). Thread-safe.
package final class TLSClientContexts: Sendable {
    /// A built context, with the identities its client certificate and key files had before it was built.
    private struct Entry {
        let files: [FileIdentity]
        let context: TLSClientContext
    }

    private let entries = Mutex<[TLSClientTerms: Entry]>([:])
    private let built = Atomic<Int>(0)

    package init() {}

    /// The context for `terms`, built on first use.
    ///
    /// A client certificate is keyed by its files' paths and by what they are now (device, inode, size and
    /// times, read with `stat` on every call): a certificate or key rotated in place builds a new context,
    /// which replaces the old one here (handshakes still on the old one keep it alive). The files are looked
    /// at before they are read, so a rotation during the build is seen on the next call and builds again.
    /// - Throws: ``SecurityError`` naming the file that cannot be read or used (see
    ///   ``TLSClientContext/init(terms:)``); nothing is kept, so the next call tries again.
    package func context(for terms: TLSClientTerms) throws(SecurityError) -> TLSClientContext {
        let files = try Self.identities(of: terms)
        return try entries.withLock { entries throws(SecurityError) -> TLSClientContext in
            if let entry = entries[terms], entry.files == files { return entry.context }
            // Built under the lock: two handshakes asking at once for new terms build one context, not two.
            let context = try TLSClientContext(terms: terms)
            built.add(1, ordering: .relaxed)
            entries[terms] = Entry(files: files, context: context)
            return context
        }
    }

    /// Drops every context (a reload): the next handshakes build new ones; live handshakes keep theirs.
    package func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    /// How many contexts this cache has built since it was made: what the sharing saves is visible in tests
    /// and benchmarks.
    package var contextsBuilt: Int { built.load(ordering: .relaxed) }

    /// How many contexts it holds now.
    package var count: Int { entries.withLock { $0.count } }

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
