/// Where pinpath runs blocking work that belongs to no service: an OpenSSL handshake outside libcurl (an audit, a
/// key-possession check), a `getaddrinfo`. A fixed number of threads, started as work needs them and kept; work
/// beyond them waits its turn in arrival order. A task awaits its work (``run(_:)``) without holding a thread of
/// Swift's concurrency pool, whose few threads must never block (as NIO's `NIOThreadPool`).
///
/// Before it, each audit and each check had a `DispatchQueue` of its own on the overcommitting pool, which starts
/// a thread whenever the others are blocked: as many threads as handshakes waiting on the network, and new ones
/// once they had ended. Here a burst of blocking work costs at most ``maximumThreads`` threads, once per process.
package final class BlockingPool: @unchecked Sendable {
    // @unchecked: `jobs`, `threads`, `idle` and `returning` are read and written only with `lock` held.

    /// The process's pool, of ``sharedThreads`` threads.
    package static let shared = BlockingPool(name: "pinpath.blocking", maximumThreads: sharedThreads)

    /// The shared pool's size: `pinpath audit`'s default concurrency (``TLSAuditBatch``), so that it still runs
    /// that many handshakes at once. The work mostly waits on the network, not the CPU: more threads than cores
    /// cost only their stacks.
    package static let sharedThreads = 8

    /// The threads it starts at most.
    package let maximumThreads: Int
    private let name: String
    private let lock = ConditionLock()
    /// A job runs its work and gives back what to do once its thread is counted free again (resume the task that
    /// waits), so that a task which submits more work at once finds that thread, not a new one.
    private typealias Job = @Sendable () -> (@Sendable () -> Void)?
    private var jobs = FIFOQueue<Job>()
    /// Threads started (or starting) and not ended.
    private var threads = 0
    /// Threads waiting for a job on the lock's condition.
    private var idle = 0
    /// Threads handing a result back, which look for the next job right after.
    private var returning = 0

    /// Makes a pool; it starts no thread until work comes.
    /// - Parameters:
    ///   - name: its threads' name (as `ps -L` shows it; at most 15 bytes are kept).
    ///   - maximumThreads: how many threads it starts at most (at least 1).
    package init(name: String, maximumThreads: Int) {
        self.name = name
        self.maximumThreads = max(1, maximumThreads)
    }

    /// Runs `work` on a thread of the pool and returns what it returned. The calling task is suspended, holding no
    /// thread, until then; cancelling it does not cut `work` short (blocking C calls cannot be interrupted), so
    /// `work` should bound itself (a deadline).
    package func run<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        let handOff = HandOff()
        let value = await withCheckedContinuation { continuation in
            submit {
                let value = work()
                SanitizerEdge.release(handOff)  // what `work` wrote, for the task (ThreadSanitizer cannot see it)
                return { continuation.resume(returning: value) }
            }
        }
        SanitizerEdge.acquire(handOff)
        return value
    }

    /// The address of one ``run(_:)``'s hand-off, for ``SanitizerEdge``.
    private final class HandOff: Sendable {}

    /// Runs `job` on a thread of the pool, for a caller that cannot await (a service thread) and learns the result
    /// from `job` itself.
    package func execute(_ job: @escaping @Sendable () -> Void) {
        submit {
            job()
            return nil
        }
    }

    private func submit(_ job: @escaping Job) {
        lock.lock()
        jobs.append(job)
        // Idle threads already signalled still count as idle until they wake, and threads handing a result back
        // take the next job right after: only a job beyond them all needs another thread.
        let startsThread = jobs.count > idle + returning && threads < maximumThreads
        if startsThread { threads += 1 }
        if idle > 0 { lock.signal() }
        lock.unlock()
        if startsThread { startThread() }
    }

    private func startThread() {
        do {
            // Never joined: the pool's threads live as long as the process.
            try DedicatedThread(name: name) { [self] in serve() }.detach()
        } catch {
            // At a thread limit: the threads running take the job. With none, the caller runs it, blocked
            // rather than never answered.
            lock.lock()
            threads -= 1
            let orphans = threads == 0 ? jobs.removeAll() : []
            lock.unlock()
            for job in orphans { job()?() }
        }
    }

    /// A thread's loop: the oldest job, else a sleep until one comes.
    private func serve() {
        lock.lock()
        while true {
            guard let job = jobs.popFirst() else {
                idle += 1
                lock.wait()
                idle -= 1
                continue
            }
            lock.unlock()
            guard let handBack = job() else {
                lock.lock()
                continue
            }
            lock.lock()
            returning += 1
            lock.unlock()
            handBack()
            lock.lock()
            returning -= 1
        }
    }
}
