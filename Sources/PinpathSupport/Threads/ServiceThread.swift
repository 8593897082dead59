import Glibc

/// The one way pinpath runs a thread of its own: a thread that serves an inbox. Callers post work into the
/// inbox and the thread wakes; ``stop()`` tells it to end, wakes it and joins it. The netlink monitor, the
/// libcurl engine (which also runs the `tcp://` exchanges) and the event writer each own one.
///
/// A thread, not a task: each blocks (in `epoll_wait`, `curl_multi_poll`, or `write` on a slow output), and the
/// monitor may switch its network namespace; neither may happen on the concurrency pool.
///
/// The thread sleeps in one of two ways (``Wakeup``): on the condition variable of the inbox's lock, or in a
/// wait of its owner's (`curl_multi_poll` woken by `curl_multi_wakeup`, `epoll_wait` woken by an eventfd),
/// so that it also wakes for its sockets. Either way a post wakes it only when it sleeps or is about to: the
/// thread says so under the inbox lock before it waits, and the poster reads and clears that under the same
/// lock, so a post between the thread's last look at the inbox and its wait is never lost (its wake-up makes the
/// wait return at once), and a burst of posts costs one wake-up, not one each.
package final class ServiceThread<Inbox>: @unchecked Sendable {
    // @unchecked: `inbox`, `phaseNow`, `sleeping` and `thread` are read and written only with `lock` held.

    /// How the thread sleeps when it has nothing to do, and so how a post wakes it.
    package enum Wakeup: Sendable {
        /// It sleeps in ``waitForWork(ifIdle:)`` on the inbox lock's condition variable.
        case condition
        /// It sleeps in a wait of the owner's, passed to ``waitForWork(ifIdle:using:)``, and `wake` ends that
        /// wait. `wake` is called from any thread, without the lock, and must make the next wait return at
        /// once if none is in progress (a write on an eventfd or a socket pair does).
        case owner(wake: @Sendable () -> Void)
    }

    /// Where the thread is in its life; posts see it, to refuse work that would never run.
    package enum Phase: Sendable, Equatable {
        case running
        /// ``stop()`` was called: the thread finishes what it must and returns.
        case stopping
        /// The thread has returned or called ``finish(_:)``: nothing posted now would be taken.
        case finished
    }

    // The inbox is the last stored property and no generic struct holds it: every field before it has an offset
    // known at compile time, so `post` and the waits need none of the runtime's generic metadata (a generic
    // `State` struct here cost each call a metadata look-up, 1,200 instructions per request of the libcurl engine).
    private let lock = ConditionLock()
    private let wakeup: Wakeup
    private var thread: DedicatedThread?
    private var phaseNow = Phase.running
    /// The thread is in (or about to enter) its wait: the next post must wake it.
    private var sleeping = false
    private var inbox: Inbox

    /// Makes the service; ``start(name:_:)`` starts its thread.
    /// - Parameters:
    ///   - inbox: the initial inbox.
    ///   - wakeup: how the thread sleeps, and so how a post wakes it.
    package init(inbox: Inbox, wakeup: Wakeup = .condition) {
        self.inbox = inbox
        self.wakeup = wakeup
    }

    /// Starts the thread, which runs `body` until it returns; `body` should return once its wait says the
    /// phase is `.stopping`. Call once. Separate from `init` so that what `body` uses may hold the service.
    /// - Parameters:
    ///   - name: the thread's name (as `ps -L` and debuggers show it; at most 15 bytes are kept).
    ///   - body: the thread's loop; it gets this service to take its work and wait. It moves to the new thread
    ///     (hence `sending`).
    /// - Throws: ``SystemCallError`` when `pthread_create` fails (EAGAIN: a thread limit was reached).
    package func start(name: String, _ body: sending @escaping (ServiceThread) -> Void) throws(SystemCallError) {
        let started = try DedicatedThread(name: name) { [self] in
            body(self)
            finish { _ in }
        }
        lock.lock()
        precondition(thread == nil, "a service thread starts once")
        thread = started
        lock.unlock()
    }

    /// How many threads pinpath has started in this process: for tests and measurements.
    package static var started: Int { DedicatedThread.started }

    // MARK: Any thread

    /// Where the thread is in its life.
    package var phase: Phase {
        lock.lock()
        defer { lock.unlock() }
        return phaseNow
    }

    /// Reads or changes the inbox under its lock, waking nobody.
    package func withInbox<Value>(_ body: (inout Inbox) -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return body(&inbox)
    }

    /// As ``withInbox(_:)``, with the phase read under the same lock.
    package func withInboxAndPhase<Value>(_ body: (inout Inbox, Phase) -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return body(&inbox, phaseNow)
    }

    /// Adds work to the inbox and wakes the thread if it sleeps.
    /// - Parameter add: adds the work, or returns `false` to refuse it (the phase says whether it would run).
    /// - Returns: whether `add` added the work.
    @discardableResult
    package func post(_ add: (inout Inbox, Phase) -> Bool) -> Bool {
        lock.lock()
        let added = add(&inbox, phaseNow)
        let wake = added && sleeping
        if wake {
            sleeping = false
            if case .condition = wakeup { lock.broadcast() }
        }
        lock.unlock()
        if wake, case .owner(let wakeOwner) = wakeup { wakeOwner() }
        return added
    }

    /// Waits until `done` holds for the inbox and phase, for at most `timeout`. For threads other than the
    /// service thread, which sees the inbox change through ``publish(_:)``.
    /// - Returns: whether `done` holds.
    package func wait(timeout: Duration, until done: (Inbox, Phase) -> Bool) -> Bool {
        let deadline = ConditionLock.Deadline(after: timeout)
        lock.lock()
        defer { lock.unlock() }
        while !done(inbox, phaseNow) {
            if !lock.wait(until: deadline) { return done(inbox, phaseNow) }
        }
        return true
    }

    /// Asks the thread to stop, wakes it, and waits for it to return. Idempotent. Called on the service
    /// thread itself (a handler or completion that drops its owner's last reference), it only asks: the
    /// thread ends its loop on its own.
    package func stop() {
        guard let thread = requestStop() else { return }
        if thread.isCurrent { thread.detach() } else { thread.join() }
    }

    /// As ``stop()``, but waits at most `timeout`; a thread still running then is left to finish on its own
    /// (blocked in a `write` to an output nobody reads, say), and the process may exit.
    /// - Returns: whether the thread had finished.
    @discardableResult
    package func stop(timeout: Duration) -> Bool {
        let thread = requestStop()
        let finished = wait(timeout: timeout) { _, phase in phase == .finished }
        guard let thread else { return finished }
        if finished && !thread.isCurrent { thread.join() } else { thread.detach() }
        return finished
    }

    /// Sets `stopping`, wakes the thread, and hands over the thread to join (once: `nil` after).
    private func requestStop() -> DedicatedThread? {
        lock.lock()
        if phaseNow == .running { phaseNow = .stopping }
        sleeping = false
        if case .condition = wakeup { lock.broadcast() }
        let thread = self.thread.take()
        lock.unlock()
        if case .owner(let wakeOwner) = wakeup { wakeOwner() }
        return thread
    }

    /// Marks the service finished, so that later posts see ``Phase/finished``, and runs `body` on the inbox
    /// in the same lock: what it takes out is all that will ever be taken. Wakes ``wait(timeout:until:)``.
    /// Called by the thread as it returns, or from any thread once the service is of no more use.
    @discardableResult
    package func finish<Value>(_ body: (inout Inbox) -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        phaseNow = .finished
        lock.broadcast()
        return body(&inbox)
    }

    // MARK: The service thread

    /// Changes the inbox and wakes every thread in ``wait(timeout:until:)``: the service thread reports its
    /// progress so.
    package func publish<Value>(_ body: (inout Inbox) -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        lock.broadcast()
        return body(&inbox)
    }

    /// With ``Wakeup/condition``: sleeps while `idle` holds and the thread is not asked to stop, then returns
    /// the phase.
    package func waitForWork(ifIdle idle: (Inbox) -> Bool) -> Phase {
        lock.lock()
        defer { lock.unlock() }
        while phaseNow == .running && idle(inbox) {
            sleeping = true
            lock.wait()
        }
        sleeping = false
        return phaseNow
    }

    /// With ``Wakeup/owner(wake:)``: runs the owner's `wait` if `idle` holds and the thread is not asked to
    /// stop; a post from then on calls `wake`.
    /// - Returns: what `wait` returned, or `nil` when there was work (or a stop) and it did not wait.
    package func waitForWork<Value>(ifIdle idle: (Inbox) -> Bool, using wait: () -> Value) -> Value? {
        lock.lock()
        let sleep = phaseNow == .running && idle(inbox)
        sleeping = sleep
        lock.unlock()
        guard sleep else { return nil }
        let value = wait()
        lock.lock()
        sleeping = false
        lock.unlock()
        return value
    }
}
