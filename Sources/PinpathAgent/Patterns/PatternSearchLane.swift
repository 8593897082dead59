import Dispatch
import Synchronization

/// Where pattern searches run: a serial queue of its own, never Swift's cooperative pool. A search may use its
/// whole ``PatternLimits`` budget (up to 2 s of CPU), and on the pool's two threads 200 such searches from an
/// included file held every other probe, the events and a SIGTERM for minutes. Here they wait for each other
/// only, in two lanes: the main file's endpoints, and every included file's.
///
/// A lane is bounded: a probe waiting for its search keeps its place among the probes in flight and its response
/// body, and 256 endpoints parked in the included files' lane held every place, stopping the main file's probes
/// as surely as the pool did. At most ``maximumWaiting`` searches wait; a search that cannot wait is not run, and
/// its probe fails (``Refusal``): never a pass that was not checked. A search that waits is run however long it
/// waited: another endpoint's slow search may delay this one's verdict, never turn it into a failure.
final class PatternSearchLane: Sendable {
    /// Why a search was not run.
    enum Refusal: Sendable {
        /// ``maximumWaiting`` searches were already waiting in the lane.
        case full(waiting: Int)
        /// The probe's task was cancelled (the agent stopping, a reload).
        case cancelled
    }

    /// The main configuration file's endpoints.
    static let mainFile = PatternSearchLane(label: "pinpath.patterns.main", files: "the main file's")
    /// Every included file's endpoints.
    static let includedFiles = PatternSearchLane(label: "pinpath.patterns.included", files: "included files'")

    /// The searches that may wait in one lane: well above what healthy patterns (microseconds each) ever queue,
    /// and 16 response bodies of at most 4 MiB.
    static let maximumWaiting = 16

    /// The lane of `endpoint`'s file.
    static func `for`(_ endpoint: EndpointConfiguration) -> PatternSearchLane {
        endpoint.isFromIncludedFile ? includedFiles : mainFile
    }

    /// Whose endpoints it serves, for messages: "included files'".
    let files: String
    private let queue: DispatchQueue
    private let waiting = Mutex(0)

    private init(label: String, files: String) {
        queue = DispatchQueue(label: label)
        self.files = files
    }

    /// `work`'s result once the lane gets to it, or `refused`'s when it cannot: the lane is full, or the calling
    /// task is cancelled while it waits (it returns at once; a search already running ends within its limits).
    func run<Result: Sendable>(_ work: @escaping @Sendable () -> Result, refused: @escaping @Sendable (Refusal) -> Result) async -> Result {
        let queued = waiting.withLock { count -> Int? in
            guard count < Self.maximumWaiting else { return nil }
            count += 1
            return count
        }
        guard queued != nil else { return refused(.full(waiting: Self.maximumWaiting)) }
        let pending = PendingSearch<Result>()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                pending.wait(continuation, orIfCancelled: refused(.cancelled))
                queue.async {
                    self.waiting.withLock { $0 -= 1 }
                    guard pending.isWaiting else { return }
                    pending.finish(work())
                }
            }
        } onCancel: {
            pending.cancel(with: refused(.cancelled))
        }
    }
}

/// One search's continuation, resumed exactly once: by the lane, or at once by a cancellation.
private final class PendingSearch<Result: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Result, Never>)
        case cancelled(Result)
        case done
    }

    private let state = Mutex(State.idle)

    /// Waits on `continuation`, or resumes it with `cancelled` when the task was cancelled before it got here.
    func wait(_ continuation: CheckedContinuation<Result, Never>, orIfCancelled cancelled: Result) {
        let early = state.withLock { state -> Result? in
            if case .cancelled(let result) = state {
                state = .done
                return result
            }
            state = .waiting(continuation)
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    var isWaiting: Bool {
        state.withLock { state in
            if case .waiting = state { true } else { false }
        }
    }

    func finish(_ result: Result) { resume(with: result) }

    func cancel(with result: Result) {
        let resumed = resume(with: result)
        if !resumed { state.withLock { state in if case .idle = state { state = .cancelled(result) } } }
    }

    @discardableResult
    private func resume(with result: Result) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Result, Never>? in
            guard case .waiting(let continuation) = state else { return nil }
            state = .done
            return continuation
        }
        continuation?.resume(returning: result)
        return continuation != nil
    }
}
