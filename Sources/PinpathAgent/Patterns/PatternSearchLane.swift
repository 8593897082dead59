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
/// Within a lane, an endpoint's search waits by what its searches have shown: those of endpoints whose last
/// search ended within its limits go first, then those of endpoints not searched yet (new, or refused so far),
/// then those of endpoints whose last search reached a limit. A server that answers many endpoints with bodies
/// that exhaust their patterns fills the queues behind a healthy endpoint's, which waits at most for the search
/// already running (with 24 such endpoints in one file, a healthy search waited 10 s, or was refused; and an
/// endpoint refused before its first search ran kept the healthy queue until one did).
final class PatternSearchLane: Sendable {
    /// What the lane knows of an endpoint's cost, which decides where its next search waits.
    enum Standing: Sendable {
        /// Its last search ended within its limits.
        case cheap
        /// None of its searches has run yet.
        case unproven
        /// Its last search reached a limit.
        case costly
    }

    /// Why a search was not run.
    enum Refusal: Sendable {
        /// ``maximumWaiting`` searches of endpoints of the same ``Standing`` were already waiting in the lane.
        case full(waiting: Int, standing: Standing)
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

    /// The searches waiting, one queue per ``Standing``.
    private struct Queues {
        var cheap = FIFOQueue<@Sendable () -> Void>()
        var unproven = FIFOQueue<@Sendable () -> Void>()
        var costly = FIFOQueue<@Sendable () -> Void>()
        /// Whether each endpoint's last search that ran reached a limit; absent until one has run.
        var lastReachedLimit: [String: Bool] = [:]
        /// A pool thread is running the lane's searches: one at a time, so the lane needs no other.
        var draining = false

        func standing(of endpoint: String) -> Standing {
            switch lastReachedLimit[endpoint] {
            case nil: .unproven
            case false?: .cheap
            case true?: .costly
            }
        }

        func count(_ standing: Standing) -> Int {
            switch standing {
            case .cheap: cheap.count
            case .unproven: unproven.count
            case .costly: costly.count
            }
        }

        mutating func append(_ job: @escaping @Sendable () -> Void, as standing: Standing) {
            switch standing {
            case .cheap: cheap.append(job)
            case .unproven: unproven.append(job)
            case .costly: costly.append(job)
            }
        }

        /// The next search in the lane's order, or `nil`.
        mutating func popFirst() -> (@Sendable () -> Void)? {
            cheap.popFirst() ?? unproven.popFirst() ?? costly.popFirst()
        }
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
            queue.state.withLock { queues in queues.lastReachedLimit[endpoint] = reachedLimit }
            pending.answer(result)
        }
        // Whether this search starts the lane's drain on the pool (none was running), or why it is not run.
        let admission = state.withLock { queues -> (startsDrain: Bool, refusal: Refusal?) in
            let standing = queues.standing(of: endpoint)
            guard queues.count(standing) < Self.maximumWaiting else {
                return (false, .full(waiting: Self.maximumWaiting, standing: standing))
            }
            queues.append(job, as: standing)
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

    /// Runs the lane's searches until none waits, in the order of ``Queues/popFirst()``.
    private func drain() {
        while let job = nextJob() { job() }
    }

    /// The next search, or `nil` (and the lane no longer draining) when none waits.
    private func nextJob() -> (@Sendable () -> Void)? {
        state.withLock { queues in
            let job = queues.popFirst()
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
