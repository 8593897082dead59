import CCurl
import CCurlShims
import PinpathReachability
import PinpathSupport
import Synchronization

/// Drives every transfer of a session on one thread with libcurl's multi interface, which blocks in
/// `curl_multi_poll` and is woken by `curl_multi_wakeup` when a transfer is added or cancelled while it sleeps.
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

    private struct Inbox {
        var added: [Transfer] = []
        var cancelled: [Transfer] = []
        /// Tasks to run on the engine thread (``Shared`` as their executor).
        var jobs: [UnownedJob] = []
        var stopping = false
        /// The loop has returned: jobs go to the global executor instead.
        var stopped = false
        /// The loop found nothing to do and is in (or about to enter) `curl_multi_poll`: the first work added
        /// wakes it, and the rest needs no wake-up of its own. Each wake-up is a write on libcurl's socket pair
        /// and a read to drain it, for every request when many are submitted from other threads.
        var sleeping = false

        /// Whether work just added must wake the loop; the first answer after it fell asleep is the only yes.
        mutating func takeSleeping() -> Bool {
            defer { sleeping = false }
            return sleeping
        }
    }

    /// What the engine thread shares with the callers. It owns the multi handle: the loop holds it until it
    /// returns, so the handle is freed after the loop's last use even when the engine itself is released
    /// on the engine thread (a completion dropping the session's last reference).
    private final class Shared: TaskExecutor, Sendable {
        let multi: Multi
        let inbox = Mutex(Inbox())
        init(multi: Multi) { self.multi = multi }
        deinit { curl_multi_cleanup(multi.pointer) }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            let queued = post { inbox in
                guard !inbox.stopped else { return false }
                inbox.jobs.append(job)
                return true
            }
            if !queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
        }

        /// Adds work to the inbox (`add` returns false to refuse it) and wakes the loop if it sleeps.
        /// - Returns: whether the work was added.
        func post(_ add: (inout Inbox) -> Bool) -> Bool {
            let (added, wake) = inbox.withLock { inbox in
                add(&inbox) ? (true, inbox.takeSleeping()) : (false, false)
            }
            if wake { curl_multi_wakeup(multi.pointer) }
            return added
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
    private var multi: Multi { shared.multi }
    private let thread = Mutex<DedicatedThread?>(nil)

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
            let started = try DedicatedThread(name: "pinpath-curl") { Self.run(shared) }
            thread.withLock { $0 = started }
        } catch {
            throw HTTPError(.engineUnavailable, "cannot start the transfer thread: \(error)")
        }
    }

    deinit { stop() }

    /// Completes every transfer in flight with ``HTTPError/Code/cancelled``, ends the engine thread and waits
    /// for it; later submissions fail at once. Idempotent. From the engine thread itself (a completion that
    /// drops the last reference), the thread is left to finish its loop on its own.
    func stop() {
        shared.inbox.withLock { $0.stopping = true }
        curl_multi_wakeup(multi.pointer)
        guard let thread = thread.withLock({ $0.take() }) else { return }
        if thread.isCurrent {
            thread.detach()
        } else {
            thread.join()
        }
    }

    /// Hands a transfer to the engine; its `completion` is called once, on the engine thread.
    func submit(_ transfer: Transfer) {
        let accepted = shared.post { inbox in
            guard !inbox.stopping else { return false }
            inbox.added.append(transfer)
            return true
        }
        if !accepted {
            transfer.completion?(.failure(HTTPError(.cancelled, "\(transfer.description): the session is shutting down")))
        }
    }

    /// Stops a transfer; it completes with ``HTTPError/Code/cancelled`` unless it already finished.
    func cancel(_ transfer: Transfer) {
        transfer.cancelled.store(true, ordering: .releasing)
        _ = shared.post { inbox in
            inbox.cancelled.append(transfer)
            return true
        }
    }

    // MARK: The engine thread

    private static func run(_ shared: Shared) {
        let multi = shared.multi
        // The transfers libcurl has, each knowing its place (``Transfer/runningIndex``): no hashing per request.
        var running: [Transfer] = []
        var pools = ConnectionPools()

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
        }

        func finish(_ transfer: Transfer, _ result: Result<HTTPResponse, HTTPError>) {
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
            transfer.completion?(result)
            transfer.completion = nil
        }

        let executor = shared.asUnownedTaskExecutor()
        // Drained by swapping with these, so that no turn of the loop allocates.
        var jobs: [UnownedJob] = []
        var added: [Transfer] = []
        var cancelled: [Transfer] = []
        while true {
            shared.inbox.withLock { inbox in
                inbox.sleeping = false
                swap(&jobs, &inbox.jobs)
            }
            for job in jobs { job.runSynchronously(on: executor) }
            jobs.removeAll(keepingCapacity: true)
            // Read after the jobs ran: what they submitted sent no wake-up (they ran on this thread), so it must
            // start in this turn, not after the next poll times out.
            let stopping = shared.inbox.withLock { inbox in
                swap(&added, &inbox.added)
                swap(&cancelled, &inbox.cancelled)
                return inbox.stopping
            }
            for transfer in added {
                if transfer.cancelled.load(ordering: .acquiring) {
                    transfer.completion?(.failure(HTTPError(.cancelled, "\(transfer.description): cancelled")))
                    continue
                }
                do throws(HTTPError) {
                    try start(transfer)
                } catch {
                    transfer.completion?(.failure(error))
                }
            }
            added.removeAll(keepingCapacity: true)
            for transfer in cancelled where transfer.runningIndex != nil {
                finish(transfer, .failure(HTTPError(.cancelled, "\(transfer.description): cancelled")))
            }
            cancelled.removeAll(keepingCapacity: true)
            if stopping {
                for transfer in running {
                    finish(transfer, .failure(HTTPError(.cancelled, "\(transfer.description): the session is shutting down")))
                }
                // Closes the pooled connections here, on the thread that used them, before stop() returns.
                pools.closeAll()
                // Tasks still preferring this thread run on the global executor from now on.
                let left = shared.inbox.withLock { inbox in
                    inbox.stopped = true
                    defer { inbox.jobs = [] }
                    return inbox.jobs
                }
                for job in left { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
                return
            }

            var active: Int32 = 0
            _ = curl_multi_perform(multi.pointer, &active)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle,
                    let transfer = Transfer.running(handle)
                else { continue }
                finish(transfer, transfer.outcome(message.pointee.data.result))
            }
            // Sleeps until a socket is ready, libcurl's next timeout, or a wake-up from submit/cancel/enqueue;
            // not at all when the completions above resumed tasks on this thread, or they added work: the next
            // turn runs them, and its curl_multi_perform reads whatever the sockets have. Work added between
            // this check and the poll finds `sleeping` set, and its wake-up makes the poll return at once.
            let ready = shared.inbox.withLock { inbox in
                let ready = !inbox.jobs.isEmpty || !inbox.added.isEmpty || !inbox.cancelled.isEmpty
                if !ready { inbox.sleeping = true }
                return ready
            }
            if !ready { _ = curl_multi_poll(multi.pointer, nil, 0, 1000, nil) }
        }
    }
}
