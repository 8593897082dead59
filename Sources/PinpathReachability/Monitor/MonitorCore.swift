import CLinuxShims
import Glibc
import PinpathSupport
import Synchronization

/// What the monitor thread and the callers share: the published snapshot, the subscribers, and the thread
/// itself, a ``ServiceThread`` whose inbox holds the commands and whose eventfd wakes it from `epoll_wait`.
/// `Sendable` because every field is immutable or behind a lock.
final class MonitorCore: Sendable {
    typealias Reply = @Sendable (Result<TargetReachability, ReachabilityError>) -> Void
    typealias Handler = @Sendable (ReachabilityEvent) -> Void

    enum Command: Sendable {
        case addTarget(WatchedTarget, Reply)
        case removeTarget(String)
        case resolved(ReachabilityTarget, Int, WatchedTarget.Resolution)
        case evaluate(WatchedTarget, Reply)
        /// Registered on the thread, so the handler sees the initial state before any change.
        case addHandler(Int, Handler)

        /// Answers a command that will never run because the monitor stopped.
        func reject() {
            switch self {
            case .addTarget(_, let reply), .evaluate(_, let reply):
                reply(.failure(ReachabilityError(.notRunning, "the reachability monitor has stopped")))
            default:
                break
            }
        }
    }

    private struct Published {
        var path: NetworkPath?
        var subscribers: [Int: AsyncStream<ReachabilityEvent>.Continuation] = [:]
        /// Called on the monitor thread, outside the lock (a handler may read `currentPath`).
        var handlers: [Int: Handler] = [:]
        var removedHandlers: Set<Int> = []
        var nextSubscriber = 0
        var statistics = ReachabilityMonitor.Statistics()
        var failure: ReachabilityError?
        var finished = false
    }

    let wakeDescriptor: Int32
    let resolutionTimeout: Duration
    private let published = Mutex(Published())
    /// The monitor thread, which sleeps in `epoll_wait` on the netlink socket and `wakeDescriptor`.
    let service: ServiceThread<[Command]>
    /// Fulfilled when the monitor has stopped, by `stop()` or a failure.
    let stopped = OneShot<Void>()
    /// Route verdicts for numeric addresses, answered on the caller's thread and kept per generation.
    let routeVerdicts = RouteVerdicts()

    init(resolutionTimeout: Duration) throws {
        wakeDescriptor = pinpath_eventfd_nonblocking()
        guard wakeDescriptor >= 0 else {
            throw ReachabilityError(.netlinkUnavailable, "cannot create an eventfd: \(String(cString: strerror(errno)))")
        }
        self.resolutionTimeout = resolutionTimeout
        service = ServiceThread(
            inbox: [],
            wakeup: .owner { [wakeDescriptor] in
                var one: UInt64 = 1
                _ = write(wakeDescriptor, &one, 8)
            })
    }

    deinit { close(wakeDescriptor) }

    // MARK: Commands (callers → thread)

    func post(_ command: Command) {
        let accepted = service.post { commands, phase in
            guard phase == .running else { return false }
            commands.append(command)
            return true
        }
        if !accepted { command.reject() }
    }

    /// The commands to run, in order, swapped into `commands` (whose storage is reused); `false` once the
    /// monitor is stopping or has finished (a `stop()` from a change handler finishes it while the thread is
    /// still running), when they are to be rejected instead.
    func takeCommands(into commands: inout [Command]) -> Bool {
        service.withInbox { swap(&commands, &$0) }
        return service.phase == .running
    }

    // MARK: Snapshots and events (thread → callers)

    var currentPath: NetworkPath { published.withLock { $0.path! } }
    var statistics: ReachabilityMonitor.Statistics { published.withLock { $0.statistics } }
    var failure: ReachabilityError? { published.withLock { $0.failure } }
    var isFinished: Bool { published.withLock { $0.finished } }

    /// Publishes a snapshot and its events: streams get them through their buffers, handlers are called
    /// here, on the monitor thread, in order.
    func publish(_ path: NetworkPath, events: [ReachabilityEvent]) {
        let handlers = published.withLock { published in
            published.path = path
            for continuation in published.subscribers.values {
                for event in events { continuation.yield(event) }
            }
            return events.isEmpty ? [:] : published.handlers
        }
        for handler in handlers.values {
            for event in events {
                // A handler may have stopped the monitor; what it published after that is not delivered.
                guard !isFinished else { return }
                handler(event)
            }
        }
    }

    /// Called on the monitor thread: gives the handler the current state, then registers it.
    /// Registers first and then delivers the initial state: both happen on the monitor thread, so no change
    /// can come between, and a handler that stops the monitor or removes itself is not registered again.
    func addHandler(_ id: Int, _ handler: @escaping Handler) {
        let path = published.withLock { published -> NetworkPath? in
            guard !published.finished, !published.removedHandlers.contains(id) else { return nil }
            published.handlers[id] = handler
            return published.path
        }
        guard let path else { return }
        for event in Self.initialEvents(path) { handler(event) }
    }

    /// Works before the handler's registration has reached the monitor thread, too.
    func removeHandler(_ id: Int) {
        let removed = published.withLock { published in
            published.removedHandlers.insert(id)
            return published.handlers.removeValue(forKey: id)
        }
        _ = removed  // released outside the lock: it may hold the last reference to the monitor
    }

    func nextSubscriberID() -> Int {
        published.withLock { published in
            defer { published.nextSubscriber += 1 }
            return published.nextSubscriber
        }
    }

    private static func initialEvents(_ path: NetworkPath) -> [ReachabilityEvent] {
        [.path(PathChange(path: path, previous: nil, reason: .initial))]
            + path.targets.map { .target(TargetChange(target: $0, previous: nil, reason: .initial, path: path)) }
    }

    func count(messages: Int, overrun: Bool) {
        published.withLock {
            $0.statistics.messages += messages
            if overrun { $0.statistics.resyncs += 1 }
        }
    }

    func subscribe() -> AsyncStream<ReachabilityEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ReachabilityEvent.self)
        published.withLock { published in
            guard !published.finished, let path = published.path else {
                continuation.finish()
                return
            }
            for event in Self.initialEvents(path) { continuation.yield(event) }
            let id = published.nextSubscriber
            published.nextSubscriber += 1
            published.subscribers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                _ = self?.published.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// The thread hit an error it cannot recover from: record it and end every stream.
    func fail(_ error: ReachabilityError) {
        published.withLock { if $0.failure == nil { $0.failure = error } }
        finish()
    }

    /// Ends every stream and answers every pending command; later commands are answered at once.
    func finish() {
        let pending = service.finish { commands in
            defer { commands = [] }
            return commands
        }
        for command in pending { command.reject() }
        routeVerdicts.close()
        let (subscribers, handlers) = published.withLock { published in
            published.finished = true
            defer {
                published.subscribers = [:]
                published.handlers = [:]
            }
            return (Array(published.subscribers.values), published.handlers)
        }
        for continuation in subscribers { continuation.finish() }
        // Released outside the lock: a handler may hold the last reference to the monitor, whose deinit stops it.
        _ = handlers
        stopped.fulfil(())
    }
}
