/// Audits many endpoints, a bounded number at a time, and hands the results back in the order given: what
/// `pinpath audit` runs, for a Swift program that audits a list of hosts itself.
///
/// Each audit waits on the network on a thread of pinpath's pool for blocking work (``TLSAudit/run(_:options:)``,
/// 8 threads), so the bound is about sockets and the servers' patience, not CPU; above 8, audits wait for a thread.
/// `pinpath audit` hands the batch its `Session`'s handshake engine instead (``connector``): every connection is
/// then a socket on the engine's one thread, and the bound is the batch's alone.
/// The batch's connections share one TLS context per client certificate, built by the first audit that needs it.
public struct TLSAuditBatch: Sendable {
    /// How many endpoints are audited at once unless a caller says otherwise.
    public static let defaultConcurrency = 8

    /// The endpoints, in the order their results are delivered.
    public let endpoints: [TLSEndpoint]
    /// How many audits run at once (at least 1).
    public let concurrency: Int
    private let options: [TLSAudit.Options]
    /// The audit contexts of this batch's connections.
    private let contexts = TLSClientContexts()
    /// How each audit gets its connection: on pinpath's pool for blocking work unless a caller with a `Session`
    /// hands its handshake engine's (what `pinpath audit` does).
    package var connector = TLSAuditConnector.blockingPool

    /// How many TLS contexts the batch has built so far: one per distinct client certificate (none, or a
    /// file's), however many endpoints share it.
    package var contextsBuilt: Int { contexts.contextsBuilt }

    /// Creates a batch.
    /// - Parameters:
    ///   - endpoints: the endpoints, in the order their results are delivered.
    ///   - concurrency: how many audits run at once; values below 1 count as 1.
    ///   - options: the options of each endpoint, asked once per endpoint before any audit starts.
    public init(
        _ endpoints: [TLSEndpoint], concurrency: Int = defaultConcurrency, options: (TLSEndpoint) throws -> TLSAudit.Options
    ) rethrows {
        self.endpoints = endpoints
        self.concurrency = max(1, concurrency)
        self.options = try endpoints.map(options)
    }

    /// Runs the audits and calls `deliver` with each result once every result before it was delivered, so the
    /// output keeps the order of ``endpoints`` while later audits run.
    /// - Parameters:
    ///   - progress: called when the batch starts (with 0) and after each audit finishes, with the number
    ///     finished so far (delivered or waiting for an earlier one); for a progress line.
    ///   - deliver: called with each result in order, on the calling task.
    /// - Throws: what `deliver` throws; that ends the batch: no further audit starts, and those in flight finish
    ///   with their results unused.
    public func run<Failure: Error>(
        progress: (_ finished: Int) -> Void = { _ in }, deliver: (TLSAudit) throws(Failure) -> Void
    ) async throws(Failure) {
        let endpoints = endpoints
        let options = options
        let concurrency = concurrency
        let contexts = contexts
        let connector = connector
        var failure: Failure?
        await withTaskGroup(of: (Int, TLSAudit).self) { group in
            var next = 0
            func startNext() {
                guard next < endpoints.count else { return }
                let index = next
                group.addTask {
                    (index, await TLSAudit.run(endpoints[index], options: options[index], contexts: contexts, connector: connector))
                }
                next += 1
            }
            for _ in 0..<concurrency { startNext() }
            progress(0)
            var waiting: [Int: TLSAudit] = [:]
            var delivered = 0
            while let (index, result) = await group.next() {
                waiting[index] = result
                startNext()
                while let ready = waiting.removeValue(forKey: delivered) {
                    do throws(Failure) {
                        try deliver(ready)
                    } catch {
                        failure = error
                        return
                    }
                    delivered += 1
                }
                progress(delivered + waiting.count)
            }
        }
        if let failure { throw failure }
    }
}
