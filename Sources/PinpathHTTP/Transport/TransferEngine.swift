import CCurl
import CCurlShims
import PinpathReachability
import PinpathSupport
import Synchronization

/// Drives every transfer of a session on one thread with libcurl's multi interface, which blocks in
/// `curl_multi_poll` and is woken by `curl_multi_wakeup` when a transfer is added or cancelled while it sleeps.
/// The `tcp://` exchanges (``TCPSocketExchange``) run on the same thread: `curl_multi_poll` waits for their
/// sockets too.
///
/// An https transfer takes and leaves its connection in the pool of its trust terms (``ConnectionPool``), so
/// that a connection verified under one policy and trust store never carries a request made under others.
/// Plain http transfers use the multi handle's own connection cache.
final class TransferEngine: Sendable {
    /// The multi handle. `@unchecked Sendable`: only the engine thread uses it, apart from
    /// `curl_multi_wakeup`, which libcurl documents as callable from any thread.
    private struct Multi: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    /// A class, read and written only under the service's lock: the service copies its inbox to ask whether it is
    /// idle, on every turn of the loop, and a struct's copy retained and released each of its arrays (about 400
    /// instructions per request). Its variables are `@exclusivity(unchecked)` for the same reason as ``Transfer``'s.
    private final class Inbox {
        @exclusivity(unchecked) var added: [Transfer] = []
        @exclusivity(unchecked) var cancelled: [Transfer] = []
        /// Streamed transfers paused for their consumer, which has now taken the buffered bytes.
        @exclusivity(unchecked) var resumed: [Transfer] = []
        @exclusivity(unchecked) var exchanges: [TCPSocketExchange] = []
        /// An exchange's task was cancelled: the thread wakes to end it (``TCPSocketExchange/Cancellation``).
        @exclusivity(unchecked) var exchangeCancelled = false
        /// Tasks to run on the engine thread (``Shared`` as their executor).
        @exclusivity(unchecked) var jobs: [UnownedJob] = []

        var isEmpty: Bool {
            jobs.isEmpty && added.isEmpty && cancelled.isEmpty && resumed.isEmpty && exchanges.isEmpty && !exchangeCancelled
        }
    }

    /// What the engine thread shares with the callers. It owns the multi handle: the loop holds it until it
    /// returns, so the handle is freed after the loop's last use even when the engine itself is released
    /// on the engine thread (a completion dropping the session's last reference).
    private final class Shared: TaskExecutor, Sendable {
        let multi: Multi
        /// The engine thread, woken by `curl_multi_wakeup`: a post while it sleeps in `curl_multi_poll` (and only
        /// then) writes on libcurl's socket pair, once for a burst of requests submitted from other threads.
        let service: ServiceThread<Inbox>
        init(multi: Multi) {
            self.multi = multi
            service = ServiceThread(inbox: Inbox(), wakeup: .owner { curl_multi_wakeup(multi.pointer) })
        }
        deinit { curl_multi_cleanup(multi.pointer) }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            let queued = service.post { inbox, phase in
                // Until the loop has returned: a stopping loop still runs them, or hands them back below.
                guard phase != .finished else { return false }
                inbox.jobs.append(job)
                return true
            }
            if !queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        }
    }

    private let shared: Shared
    /// Runs tasks on the engine thread, between libcurl's work: a task that prefers it (`withTaskExecutorPreference`)
    /// and sends requests crosses no thread to submit a transfer nor to resume with its outcome.
    var executor: any TaskExecutor { shared }
    /// The easy handles of finished transfers, for the next ones.
    let handles = EasyHandlePool()
    /// The header list of the last request, for the next ones with the same fields.
    let headerLists = HeaderListCache()

    /// Starts the engine's thread.
    /// - Throws: ``HTTPError`` `engineUnavailable` when libcurl is not the OpenSSL build or cannot start.
    init() throws(HTTPError) {
        _ = try CurlRuntime.check()
        guard let pointer = curl_multi_init() else {
            throw HTTPError(.engineUnavailable, "libcurl cannot create a multi handle")
        }
        let shared = Shared(multi: Multi(pointer: pointer))
        self.shared = shared
        // Many requests to one host share connections (HTTP/2 multiplexes them) instead of opening hundreds.
        _ = pinpath_curl_multi_setopt_long(pointer, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = pinpath_curl_multi_setopt_long(pointer, CURLMOPT_MAX_HOST_CONNECTIONS, 64)
        do {
            try shared.service.start(name: "pinpath-curl") { _ in Self.run(shared) }
        } catch {
            throw HTTPError(.engineUnavailable, "cannot start the transfer thread: \(error)")
        }
    }

    deinit { stop() }

    /// Completes every transfer and exchange in flight with ``HTTPError/Code/cancelled``, ends the engine
    /// thread and waits for it; later submissions fail at once. Idempotent. From the engine thread itself (a
    /// completion that drops the last reference), the thread is left to finish its loop on its own.
    func stop() {
        shared.service.stop()
    }

    /// Hands a transfer to the engine; its `completion` is called once, on the engine thread.
    func submit(_ transfer: Transfer) {
        let accepted = shared.service.post { inbox, phase in
            guard phase == .running else { return false }
            inbox.added.append(transfer)
            return true
        }
        if !accepted {
            transfer.complete(.failure(HTTPError(.cancelled, "\(transfer.description): the session is shutting down")))
        }
    }

    /// Stops a transfer; it completes with ``HTTPError/Code/cancelled`` unless it already finished.
    func cancel(_ transfer: Transfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        shared.service.post { inbox, _ in
            inbox.cancelled.append(transfer)
            return true
        }
    }

    /// Resumes a streamed transfer paused for its consumer (libcurl's `curl_easy_pause` must run on the engine
    /// thread); nothing when it has ended or is not paused.
    func resume(_ transfer: Transfer) {
        shared.service.post { inbox, _ in
            inbox.resumed.append(transfer)
            return true
        }
    }

    /// Runs the exchange of a `tcp://` check on `socket` (which it closes in every case) on the engine thread,
    /// bounded by `deadline`; cancelling the task ends it at once.
    /// - Returns: what the server answered (possibly `nil`: it closed without a word), as text.
    /// - Throws: ``HTTPError`` `timedOut` when nothing arrives before the deadline (and `readUntil` is not met),
    ///   `protocolError` when the socket fails, `cancelled` when the task is cancelled or the session is shutting
    ///   down.
    func exchange(
        socket: Int32, _ exchange: TCPExchange, deadline: ContinuousClock.Instant, label: String
    ) async throws(HTTPError) -> String? {
        let handOff = shared  // one address for ThreadSanitizer's edge from the engine thread to this task
        let cancellation = TCPSocketExchange.Cancellation()
        let service = shared.service
        let result: Result<String?, HTTPError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let running = TCPSocketExchange(
                    socket: socket, exchange: exchange, deadline: deadline, label: label, cancellation: cancellation,
                    completion: { result in
                        SanitizerEdge.release(handOff)
                        continuation.resume(returning: result)
                    })
                let accepted = service.post { inbox, phase in
                    guard phase == .running else { return false }
                    inbox.exchanges.append(running)
                    return true
                }
                if !accepted { running.finish(.failure(HTTPError(.cancelled, "\(label): the session is shutting down"))) }
            }
        } onCancel: {
            // A probe whose client went (the /probe route) frees its in-flight place now, not at its deadline.
            cancellation.request()
            _ = service.post { inbox, _ in
                inbox.exchangeCancelled = true
                return true
            }
        }
        SanitizerEdge.acquire(handOff)
        return try result.get()
    }

    // MARK: The engine thread

    private static func run(_ shared: Shared) {
        let multi = shared.multi
        let service = shared.service
        // The transfers libcurl has, each knowing its place (``Transfer/runningIndex``): no hashing per request.
        var running: [Transfer] = []
        var pools = ConnectionPools()
        // The streamed transfers, whose deadlines the engine keeps (``Transfer/deadlineIndex``): libcurl's
        // CURLOPT_TIMEOUT is one total, fixed when the transfer starts.
        var timed: [Transfer] = []

        func start(_ transfer: Transfer) throws(HTTPError) {
            let pool = try transfer.connectionTerms.map { terms throws(HTTPError) in try pools.pool(for: terms) }
            try pool?.attach(transfer)
            let code = curl_multi_add_handle(multi.pointer, transfer.handle)
            guard code == CURLM_OK else {
                pool?.detach(transfer)
                throw HTTPError(.engineUnavailable, "\(transfer.description): libcurl: \(String(cString: curl_multi_strerror(code)))")
            }
            transfer.pool = pool
            transfer.runningIndex = running.count
            running.append(transfer)
            if transfer.bodyChannel != nil {
                transfer.deadlineIndex = timed.count
                timed.append(transfer)
            }
        }

        func finish(_ transfer: Transfer, _ result: Result<SessionResponse, HTTPError>) {
            curl_multi_remove_handle(multi.pointer, transfer.handle)
            transfer.pool?.detach(transfer)
            transfer.pool = nil
            if let index = transfer.runningIndex {
                let last = running.removeLast()
                if last !== transfer {
                    running[index] = last
                    last.runningIndex = index
                }
                transfer.runningIndex = nil
            }
            if let index = transfer.deadlineIndex {
                let last = timed.removeLast()
                if last !== transfer {
                    timed[index] = last
                    last.deadlineIndex = index
                }
                transfer.deadlineIndex = nil
            }
            transfer.complete(result)
        }

        let executor = shared.asUnownedTaskExecutor()
        // Drained by swapping with these, so that no turn of the loop allocates.
        var jobs: [UnownedJob] = []
        var added: [Transfer] = []
        var cancelled: [Transfer] = []
        var resumed: [Transfer] = []
        var newExchanges: [TCPSocketExchange] = []
        // The exchanges waiting for their sockets, and what `curl_multi_poll` waits for on their behalf (same order).
        var exchanges: [TCPSocketExchange] = []
        var waits: [curl_waitfd] = []
        while true {
            service.withInbox { inbox in swap(&jobs, &inbox.jobs) }
            for job in jobs { job.runSynchronously(on: executor) }
            jobs.removeAll(keepingCapacity: true)
            // Read after the jobs ran: what they submitted sent no wake-up (they ran on this thread), so it must
            // start in this turn, not after the next poll times out.
            let stopping = service.withInboxAndPhase { inbox, phase in
                swap(&added, &inbox.added)
                swap(&cancelled, &inbox.cancelled)
                swap(&resumed, &inbox.resumed)
                swap(&newExchanges, &inbox.exchanges)
                inbox.exchangeCancelled = false  // each exchange reads its own cancellation below
                return phase != .running
            }
            for transfer in added {
                if transfer.cancelled.load(ordering: .acquiring) {
                    transfer.complete(.failure(HTTPError(.cancelled, "\(transfer.description): cancelled")))
                    continue
                }
                do throws(HTTPError) {
                    try start(transfer)
                } catch {
                    transfer.complete(.failure(error))
                }
            }
            added.removeAll(keepingCapacity: true)
            for transfer in cancelled where transfer.runningIndex != nil {
                finish(transfer, .failure(HTTPError(.cancelled, "\(transfer.description): cancelled")))
            }
            cancelled.removeAll(keepingCapacity: true)
            let turn = ContinuousClock.now
            for transfer in resumed where transfer.runningIndex != nil && transfer.pausedForConsumer {
                transfer.resumeForConsumer(now: turn)
            }
            resumed.removeAll(keepingCapacity: true)
            for exchange in newExchanges where !exchange.advance(now: turn) { exchanges.append(exchange) }
            newExchanges.removeAll(keepingCapacity: true)
            if stopping {
                for transfer in running {
                    finish(transfer, .failure(HTTPError(.cancelled, "\(transfer.description): the session is shutting down")))
                }
                for exchange in exchanges {
                    exchange.finish(.failure(HTTPError(.cancelled, "the tcp exchange: the session is shutting down")))
                }
                // Closes the pooled connections here, on the thread that used them, before stop() returns.
                pools.closeAll()
                // Tasks still preferring this thread run on the global executor from now on.
                let left = service.finish { inbox in
                    defer { inbox = Inbox() }
                    return inbox
                }
                for job in left.jobs { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
                for transfer in left.added {
                    transfer.complete(.failure(HTTPError(.cancelled, "\(transfer.description): the session is shutting down")))
                }
                for exchange in left.exchanges {
                    exchange.finish(.failure(HTTPError(.cancelled, "the tcp exchange: the session is shutting down")))
                }
                return
            }

            var active: Int32 = 0
            _ = curl_multi_perform(multi.pointer, &active)
            // Bytes written during the turn reach a waiting consumer now, in one wake-up (``BodyChannel/flush()``).
            for transfer in timed { transfer.bodyChannel?.flush() }
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                    let transfer = Transfer.running(handle)
                else { continue }
                finish(transfer, transfer.outcome(message.pointee.data.result))
            }
            // Sleeps until a socket is ready (libcurl's or an exchange's), libcurl's next timeout, an exchange's
            // deadline, or a wake-up from submit/cancel/enqueue; not at all when the completions above resumed
            // tasks on this thread, or they added work: the next turn runs them, and its curl_multi_perform reads
            // whatever the sockets have. Work added from now on wakes the poll (``ServiceThread``).
            waits.removeAll(keepingCapacity: true)
            var timeout: Int32 = 1000
            if !timed.isEmpty {
                let now = ContinuousClock.now
                // Backwards: finishing one moves the last into its place, which has been checked.
                for index in timed.indices.reversed() {
                    let transfer = timed[index]
                    switch transfer.nextDeadline(now: now) {
                    case .none: break
                    case .at(let deadline): timeout = min(timeout, Int32(clamping: max(1, (deadline - now).wholeMilliseconds + 1)))
                    case .passed(let failure): finish(transfer, .failure(failure))
                    }
                }
            }
            for exchange in exchanges {
                waits.append(curl_waitfd(fd: exchange.socket, events: exchange.awaited, revents: 0))
                let left = exchange.deadline - ContinuousClock.now
                timeout = min(timeout, Int32(clamping: max(1, left.wholeMilliseconds + 1)))
            }
            let waited = service.waitForWork(ifIdle: \.isEmpty) {
                curl_multi_poll(multi.pointer, &waits, UInt32(waits.count), timeout, nil)
            }
            guard !exchanges.isEmpty else { continue }
            // An exchange goes on when its socket is ready or its deadline has passed.
            let now = ContinuousClock.now
            var kept = 0
            for (index, exchange) in exchanges.enumerated() {
                let ready = waited != nil && waits[index].revents != 0
                if (ready || now >= exchange.deadline || exchange.cancellation.isRequested) && exchange.advance(now: now) {
                    continue
                }
                exchanges[kept] = exchange
                kept += 1
            }
            exchanges.removeLast(exchanges.count - kept)
        }
    }
}
