/// Which due probes may start: at most ``maximumInFlight`` run at once, and the rest wait their turn, oldest
/// first. A burst (the first pass, the path coming back for thousands of endpoints) then waits here instead
/// of piling up transfers whose timeouts run out in libcurl's queue. Also measures how late probes start
/// against their schedule.
///
/// A value with no locking: the agent's actor owns it.
struct ProbeAdmission {
    /// Full handshakes cost about 1.5 ms of CPU each here: 256 at once already keep two cores busy.
    static let maximumInFlight = 256

    private var running: [String: Task<Void, Never>] = [:]
    /// Due probes waiting for room, oldest first from `waitingHead`.
    private var waiting: [(name: String, due: ContinuousClock.Instant)] = []
    private var waitingHead = 0
    private var waitingNames = Set<String>()
    /// How late probes started against their schedule.
    private(set) var lateness = LatenessSamples()

    /// Whether no probe runs.
    var isIdle: Bool { running.isEmpty }

    /// Whether `name`'s probe runs now.
    func isRunning(_ name: String) -> Bool { running[name] != nil }

    /// Whether a probe due at `due` may start now; when all the room is taken it is queued instead (once per
    /// endpoint), for ``nextWaiting()``.
    mutating func admit(_ name: String, due: ContinuousClock.Instant) -> Bool {
        guard running.count < Self.maximumInFlight else {
            if waitingNames.insert(name).inserted { waiting.append((name, due)) }
            return false
        }
        return true
    }

    /// Records a started probe; `due`, when given, counts toward the lateness.
    mutating func started(_ name: String, task: Task<Void, Never>, due: ContinuousClock.Instant?) {
        if let due { lateness.record(due.duration(to: .now)) }
        running[name] = task
    }

    /// Records a probe that reported back: its room is free.
    mutating func finished(_ name: String) { running[name] = nil }

    /// The oldest queued probe that may start now, or `nil` when there is no room or nothing waits.
    mutating func nextWaiting() -> (name: String, due: ContinuousClock.Instant)? {
        defer {
            if waitingHead == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                waitingHead = 0
            }
        }
        while running.count < Self.maximumInFlight, waitingHead < waiting.count {
            let next = waiting[waitingHead]
            waitingHead += 1
            waitingNames.remove(next.name)
            if running[next.name] == nil { return next }
        }
        return nil
    }

    /// Forgets the queued probes: not started, nothing to wait for.
    mutating func dropWaiting() {
        waiting.removeAll()
        waitingHead = 0
        waitingNames.removeAll()
    }

    /// Cancels the running probes (their transfers stop).
    func cancelRunning() {
        for task in running.values { task.cancel() }
    }
}
