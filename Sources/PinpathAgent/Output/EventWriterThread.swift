import Glibc
import PinpathSupport

/// The agent's event writer thread: the envelope of ``EventWriter``, written on a thread of its own so that a
/// slow or failing output never blocks a probe or the network monitor.
///
/// - ``emit(event:fields:)`` encodes the line on the caller's thread and queues it. It never blocks on
///   the output: when `capacity` lines are already waiting, the line is dropped and counted.
/// - One thread (a `ServiceThread`), started by `init`, drains the queue into the ``EventSink``; it sleeps
///   on a condition variable while there is nothing to do. A line the sink refuses (EPIPE, ENOSPC) is dropped and counted.
/// - `time` is when the event was queued, so it never goes backwards from line to line. `seq` is given as
/// each line is written, so the lines that reach the output count 1, 2, 3… with no gaps: a gap a consumer sees was made
/// downstream. What pinpath itself
///   dropped is reported by an `events.dropped` line (`count`, `reason`: `queue_full` or `write_failed`,
///   `error`: `ENOSPC`, …), written before the next line once the output takes lines again.
/// - ``reopen()`` (SIGUSR1), ``flush(timeout:)`` and ``close(timeout:)`` (shutdown).
///
/// Every method may be called from any thread.
final class EventWriterThread: Sendable {
    /// The event type of the drop report.
    static let droppedEvent = EventCatalog.eventsDropped.name

    /// Counters since start, for metrics (`pinpath_events_dropped_total`).
    struct Statistics: Sendable, Equatable {
        /// Lines queued by ``EventWriterThread/emit(event:fields:)``.
        var accepted = 0
        /// Lines the sink took, `events.dropped` lines included.
        var written = 0
        /// Lines refused because the queue was full.
        var droppedQueueFull = 0
        /// Lines the sink failed to write.
        var droppedWriteFailed = 0
        /// All lines lost.
        var dropped: Int { droppedQueueFull + droppedWriteFailed }
    }

    private let service: ServiceThread<Queue>
    private let capacity: Int
    /// Sees every event built by ``AgentEvents`` as it is emitted (the status document's tap), on the caller's thread.
    private let observer: (@Sendable (AgentEvent) -> Void)?

    /// Starts the writer thread.
    /// - Parameters:
    ///   - sink: where lines go. It moves to the writer's thread (hence `sending`): keep no other use of it.
    ///   - capacity: how many lines may wait, those being written included, before new ones are dropped.
    ///   - format: the prefix and envelope fields the sink's destination wants.
    ///   - observer: called with each event emitted through ``emit(_:)``, before it is queued (kept or dropped): it
    ///     must be quick and must not emit.
    init(
        sink: sending any EventSink, capacity: Int = 10_000, format: EventLineFormat = EventLineFormat(),
        observer: (@Sendable (AgentEvent) -> Void)? = nil
    ) {
        precondition(capacity > 0, "capacity must be positive")
        self.capacity = capacity
        self.observer = observer
        service = ServiceThread(inbox: Queue())
        let drain = Drain(sink: sink, format: format)
        do {
            try service.start(name: "pinpath-events") { service in drain.run(service) }
        } catch {
            // The agent cannot run without its writer; pthread_create fails only at a thread limit.
            fatalError("cannot start the event writer thread: \(error)")
        }
    }

    deinit {
        // Lets the thread write what is queued and end, rather than wait forever for lines.
        service.stop(timeout: .zero)
    }

    /// Queues one event built by ``AgentEvents``; returns at once (see ``emit(event:fields:)``).
    @discardableResult
    func emit(_ event: AgentEvent) -> Bool {
        observer?(event)
        return emit(event: event.name, level: event.level, fields: event.fields)
    }

    /// Queues one event line; returns at once.
    /// - Returns: `false` when the line was dropped: the queue is full (counted, reported later by an
    ///   `events.dropped` line) or the writer is closed (not counted).
    @discardableResult
    func emit(event: String, level: EventLevel = .info, fields: [(String, JSONValue)]) -> Bool {
        let body = EventLine.body(event: event, level: level, fields: fields)
        return service.post { state, phase in
            guard phase == .running else { return false }
            guard state.outstanding < capacity else {
                state.unreportedQueueFull += 1
                state.statistics.droppedQueueFull += 1
                return false
            }
            // The time is read under the lock, so that queue order is time order: read before it, a producer
            // preempted on its way in went out after a later line (12 ms backwards under the fault storm).
            state.queue.append(Queue.Line(time: UTCTime.now(), level: level, body: body))
            state.outstanding += 1
            state.statistics.accepted += 1
            return true
        }
    }

    /// Asks the writer thread to reopen the sink (SIGUSR1 after logrotate) before its next line. Returns at
    /// once. Call it from a `DispatchSourceSignal` handler, not from a signal handler: it takes a lock.
    func reopen() {
        service.post { state, _ in
            state.reopenRequested = true
            return true
        }
    }

    /// Waits until every line emitted so far has been written or dropped, for at most `timeout`.
    /// - Returns: `false` if lines were still waiting at the deadline (the output blocks: a reader that
    ///   stopped reading).
    @discardableResult
    func flush(timeout: Duration) -> Bool {
        service.wait(timeout: timeout) { state, phase in
            (state.outstanding == 0 && state.unreportedQueueFull == 0) || phase == .finished
        }
    }

    /// Stops taking lines, writes what is queued and ends the thread, waiting at most `timeout`.
    /// - Returns: `false` if the thread had not finished at the deadline; it is then left to finish (or block
    ///   in `write`) on its own, and the process may exit.
    @discardableResult
    func close(timeout: Duration) -> Bool {
        service.stop(timeout: timeout)
    }

    /// The counters so far.
    var statistics: Statistics { service.withInbox { $0.statistics } }
}

/// What the callers and the writer thread share, in the inbox of its ``ServiceThread``. Closing is the
/// service's stop: the thread writes what is queued, then returns.
private struct Queue {
    struct Line {
        var time: String
        var level: EventLevel
        var body: [UInt8]
    }

    var queue: [Line] = []
    /// Lines queued or in the writer's hands: what the capacity bounds.
    var outstanding = 0
    /// Lines refused since the writer thread last took its work; it reports them.
    var unreportedQueueFull = 0
    var reopenRequested = false
    var statistics = EventWriterThread.Statistics()

    var hasWork: Bool { !queue.isEmpty || unreportedQueueFull > 0 || reopenRequested }
}

/// The writer thread's side: the sink and everything only that thread touches.
private final class Drain {
    // Not Sendable: after init, only the writer thread (`run`) uses it; it moves there with the thread's closure.
    private let sink: any EventSink
    private let format: EventLineFormat
    private var seq = 0
    private var buffer: [UInt8] = []
    private var batch: [Queue.Line] = []
    /// Drops not yet reported by an `events.dropped` line.
    private var unreportedQueueFull = 0
    private var unreportedWriteFailed = 0
    private var lastError = OutputError(errno: 0)
    /// Counted here and published once per batch, to take the lock once per batch, not per line.
    private var written = 0
    private var writeFailed = 0

    init(sink: sending any EventSink, format: EventLineFormat) {
        self.sink = sink
        self.format = format
        buffer.reserveCapacity(1024)
    }

    func run(_ service: ServiceThread<Queue>) {
        while true {
            let work = take(from: service)
            if work.reopen {
                // A failure leaves the sink closed; its next write tries to open again and counts a drop.
                do {
                    try sink.reopen()
                } catch {
                    lastError = error
                    // The events output itself is what fails: say so where the service manager logs.
                    let reason =
                        switch error.errno {
                        case ELOOP: "a symbolic link is in its place, and pinpath does not write through links"
                        case ENXIO: "something other than a regular file is in its place (a FIFO, a device)"
                        default: error.errnoName
                        }
                    try? LineOutput(descriptor: STDERR_FILENO).write(
                        """
                        pinpath: warning: cannot reopen the events output (\(reason)); lines are dropped, and counted in \
                        events.dropped, until it can be written\n
                        """
                    )
                }
            }
            for line in batch { write(line) }
            unreportedQueueFull += work.queueDrops
            // Queue drops happened after every line of this batch was queued: report them now, after it.
            if work.reopen || work.queueDrops > 0 { _ = writeNotices(time: work.time) }
            let count = batch.count
            batch.removeAll(keepingCapacity: true)
            // Wakes flush and close, which wait for this; the service marks the writer finished when this returns.
            let finished = service.publish { state in
                state.outstanding -= count
                state.statistics.written += written
                state.statistics.droppedWriteFailed += writeFailed
                return work.closing && state.queue.isEmpty
            }
            (written, writeFailed) = (0, 0)
            if finished { return }
        }
    }

    /// Sleeps until there is work, then takes it: the queued lines (swapped into `batch`, whose storage is
    /// reused), the unreported queue drops, and the flags.
    /// - Returns: also `time`, read under the lock: later than every line taken, earlier than any queued after.
    private func take(from service: ServiceThread<Queue>) -> (queueDrops: Int, reopen: Bool, closing: Bool, time: String) {
        let closing = service.waitForWork(ifIdle: { !$0.hasWork }) != .running
        return service.withInbox { state in
            swap(&batch, &state.queue)
            defer { (state.unreportedQueueFull, state.reopenRequested) = (0, false) }
            return (state.unreportedQueueFull, state.reopenRequested, closing, UTCTime.now())
        }
    }

    private func write(_ line: Queue.Line) {
        guard writeNotices(time: line.time) else {
            // The output still fails (the report itself could not go out): do not try the line.
            writeFailed += 1
            unreportedWriteFailed += 1
            return
        }
        if !put(time: line.time, level: line.level, body: line.body) {
            writeFailed += 1
            unreportedWriteFailed += 1
        }
    }

    /// Writes the pending `events.dropped` lines; `false` if the sink still fails.
    /// - Parameter time: the reports' time: that of the line they go out before, or the batch's, so that
    ///   `time` never goes backwards in the output (the time of writing is later than the next line's).
    private func writeNotices(time: String) -> Bool {
        if unreportedQueueFull > 0 {
            guard put(notice: unreportedQueueFull, reason: "queue_full", error: nil, time: time) else { return false }
            unreportedQueueFull = 0
        }
        if unreportedWriteFailed > 0 {
            guard put(notice: unreportedWriteFailed, reason: "write_failed", error: lastError.errnoName, time: time) else {
                return false
            }
            unreportedWriteFailed = 0
        }
        return true
    }

    private func put(notice count: Int, reason: String, error: String?, time: String) -> Bool {
        let notice = AgentEvents.dropped(count: count, reason: reason, errorName: error)
        return put(time: time, level: notice.level, body: EventLine.body(event: notice.name, level: notice.level, fields: notice.fields))
    }

    /// Writes one line with the next `seq`; `seq` moves only when the sink took the line.
    private func put(time: String, level: EventLevel, body: [UInt8]) -> Bool {
        EventLine.assemble(seq: seq + 1, time: time, body: body, level: level, format: format, into: &buffer)
        let outcome = buffer.withUnsafeBytes { bytes in Result { () throws(OutputError) in try sink.write(bytes) } }
        do {
            try outcome.get()
            seq += 1
            written += 1
            return true
        } catch {
            lastError = error
            return false
        }
    }
}
