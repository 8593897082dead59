import CShims
import Glibc
import Synchronization

/// What the monitor thread and the callers share: the published snapshot, the subscribers, and a command
/// inbox whose eventfd wakes the thread. `Sendable` because every field is immutable or behind a `Mutex`.
final class MonitorCore: Sendable {
    typealias Reply = @Sendable (Result<TargetReachability, ReachabilityError>) -> Void

    enum Command: Sendable {
        case addTarget(WatchedTarget, Reply)
        case removeTarget(String)
        case resolved(ReachabilityTarget, WatchedTarget.Resolution)
        case evaluate(WatchedTarget, Reply)
        case stop

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
        var nextSubscriber = 0
        var statistics = ReachabilityMonitor.Statistics()
        var failure: ReachabilityError?
        var finished = false
    }

    private struct Inbox {
        var commands: [Command] = []
        var closed = false
    }

    let wakeDescriptor: Int32
    let resolutionTimeout: Duration
    private let published = Mutex(Published())
    private let inbox = Mutex(Inbox())

    init(resolutionTimeout: Duration) throws {
        wakeDescriptor = pinpath_eventfd_nonblocking()
        guard wakeDescriptor >= 0 else {
            throw ReachabilityError(.netlinkUnavailable, "cannot create an eventfd: \(String(cString: strerror(errno)))")
        }
        self.resolutionTimeout = resolutionTimeout
    }

    deinit { close(wakeDescriptor) }

    // MARK: Commands (callers → thread)

    func post(_ command: Command) {
        let accepted = inbox.withLock { inbox in
            guard !inbox.closed else { return false }
            inbox.commands.append(command)
            return true
        }
        guard accepted else { return command.reject() }
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    func takeCommands() -> [Command] {
        inbox.withLock { inbox in
            defer { inbox.commands.removeAll(keepingCapacity: true) }
            return inbox.commands
        }
    }

    // MARK: Snapshots and events (thread → callers)

    var currentPath: NetworkPath { published.withLock { $0.path! } }
    var statistics: ReachabilityMonitor.Statistics { published.withLock { $0.statistics } }
    var failure: ReachabilityError? { published.withLock { $0.failure } }

    func publish(_ path: NetworkPath, events: [ReachabilityEvent]) {
        published.withLock { published in
            published.path = path
            for continuation in published.subscribers.values {
                for event in events { continuation.yield(event) }
            }
        }
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
            continuation.yield(.path(PathChange(path: path, previous: nil, reason: .initial)))
            for target in path.targets {
                continuation.yield(.target(TargetChange(target: target, previous: nil, reason: .initial, path: path)))
            }
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
        let pending = inbox.withLock { inbox in
            inbox.closed = true
            defer { inbox.commands = [] }
            return inbox.commands
        }
        for command in pending { command.reject() }
        let subscribers = published.withLock { published in
            published.finished = true
            defer { published.subscribers = [:] }
            return Array(published.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
