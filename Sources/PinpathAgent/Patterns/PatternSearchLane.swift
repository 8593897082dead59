import PinpathSupport
import Synchronization

/// Where pattern searches run: one at a time per lane, on the blocking pool (``BlockingPool``), never Swift's
/// cooperative pool. A search may use its whole ``PatternLimits`` budget (up to 2 s of CPU), and on the
/// concurrency pool's two threads 200 such searches from an included file held every other probe, the events and
/// a SIGTERM for minutes. Here they wait for each other only, in two lanes: the main file's endpoints, and every
/// included file's; each lane holds at most one of the pool's threads.
///
/// A lane is bounded: a probe waiting for its search keeps its place among the probes in flight and its response
/// body. At most ``maximumWaiting`` searches wait; a search that cannot wait is not run, and its probe fails
/// (``Refusal``): never a pass that was not checked. A search that waits is run however long it waited: another
/// endpoint's slow search may delay this one's verdict, never turn it into a failure.
///
/// Within a lane, endpoints whose last search reached a limit wait apart and go after the others: a server that
/// answers many endpoints with bodies that exhaust their patterns fills its own queue, not the one a healthy
/// endpoint's search waits in (with 24 such endpoints in one file, a healthy search waited 10 s, or was refused).
final class PatternSearchLane: Sendable {
    /// Why a search was not run.
    enum Refusal: Sendable {
        /// ``maximumWaiting`` searches were already waiting in the lane, of endpoints whose last search reached a
        /// limit when `costly`.
        case full(waiting: Int, costly: Bool)
        /// The probe's task was cancelled (the agent stopping, a reload).
        case cancelled
    }

    /// The main configuration file's endpoints.
    static let mainFile = PatternSearchLane(files: "the main file's")
    /// Every included file's endpoints.
    static let includedFiles = PatternSearchLane(files: "included files'")

    /// The searches that may wait in one of a lane's two queues: well above what healthy patterns (microseconds
    /// each) ever queue, and 16 response bodies of at most 4 MiB.
    static let maximumWaiting = 16

    /// The lane of `endpoint`'s file.
    static func `for`(_ endpoint: EndpointConfiguration) -> PatternSearchLane {
        endpoint.isFromIncludedFile ? includedFiles : mainFile
    }

    /// Whose endpoints it serves, for messages: "included files'".
    let files: String
    private let state = Mutex(Queues())

    /// The searches waiting, the cheap ones apart from those of endpoints whose last search reached a limit.
    private struct Queues {
        var cheap = FIFOQueue<@Sendable () -> Void>()
        var costly = FIFOQueue<@Sendable () -> Void>()
        var costlyEndpoints: Set<String> = []
        /// A pool thread is running the lane's searches: one at a time, so the lane needs no other.
        var draining = false
    }

    private init(files: String) {
        self.files = files
    }

    /// `work`'s result once the lane gets to it, or `refused`'s when it cannot: the lane is full, or the calling
    /// task is cancelled while it waits (it returns at once; a search already running ends within its limits).
    /// `work` says whether its search reached a limit, which decides where `endpoint`'s next search waits.
    func run<Result: Sendable>(
        for endpoint: String, _ work: @escaping @Sendable () -> (result: Result, reachedLimit: Bool),
        refused: @escaping @Sendable (Refusal) -> Result
    ) async -> Result {
        let pending = PendingSearch<Result>()
        let job: @Sendable () -> Void = { [queue = self] in
            guard pending.isWaiting else { return }
            let (result, reachedLimit) = work()
            queue.state.withLock { queues in
                if reachedLimit { queues.costlyEndpoints.insert(endpoint) } else { queues.costlyEndpoints.remove(endpoint) }
            }
            pending.answer(result)
        }
        // Whether this search starts the lane's drain on the pool (none was running), or why it is not run.
        let admission = state.withLock { queues -> (startsDrain: Bool, refusal: Refusal?) in
            let costly = queues.costlyEndpoints.contains(endpoint)
            guard (costly ? queues.costly.count : queues.cheap.count) < Self.maximumWaiting else {
                return (false, .full(waiting: Self.maximumWaiting, costly: costly))
            }
            if costly { queues.costly.append(job) } else { queues.cheap.append(job) }
            defer { queues.draining = true }
            return (!queues.draining, nil)
        }
        if let refusal = admission.refusal { return refused(refusal) }
        let startsDrain = admission.startsDrain
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                pending.wait(continuation)
                if startsDrain { BlockingPool.shared.execute { self.drain() } }
            }
        } onCancel: {
            pending.answer(refused(.cancelled))
        }
        SanitizerEdge.acquire(pending)
        return result
    }

    /// Runs the lane's searches until none waits: the first cheap search waiting, else the first costly.
    private func drain() {
        while let job = nextJob() { job() }
    }

    /// The next search, or `nil` (and the lane no longer draining) when none waits.
    private func nextJob() -> (@Sendable () -> Void)? {
        state.withLock { queues in
            let job = queues.cheap.popFirst() ?? queues.costly.popFirst()
            if job == nil { queues.draining = false }
            return job
        }
    }
}

/// One search's continuation, resumed exactly once: by the lane, or at once by a cancellation. Either may come
/// before the continuation is there (the lane may run the search before its task waits): the result is
/// kept for it.
private final class PendingSearch<Result: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Result, Never>)
        case early(Result)
        case done
    }

    private let state = Mutex(State.idle)

    /// Waits on `continuation`, or resumes it at once with a result that came first.
    func wait(_ continuation: CheckedContinuation<Result, Never>) {
        let early = state.withLock { state -> Result? in
            if case .early(let result) = state {
                state = .done
                return result
            }
            state = .waiting(continuation)
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    /// Whether the search is still wanted: neither cancelled nor answered. A job that finds it is not skips it.
    var isWaiting: Bool {
        state.withLock { state in
            switch state {
            case .idle, .waiting: true
            case .early, .done: false
            }
        }
    }

    /// Answers with `result`, unless answered already (the first answer wins: the search's, or the cancellation's).
    func answer(_ result: Result) {
        let continuation = state.withLock { state -> CheckedContinuation<Result, Never>? in
            switch state {
            case .idle:
                state = .early(result)
                return nil
            case .waiting(let continuation):
                state = .done
                return continuation
            case .early, .done:
                return nil
            }
        }
        SanitizerEdge.release(self)  // what made `result` on this thread, for the task (ThreadSanitizer cannot see it)
        continuation?.resume(returning: result)
    }
}
