/// Which due probes may start: at most ``maximumInFlight`` run at once, and the rest wait their turn, oldest
/// first. A burst (the first pass, the path coming back for thousands of endpoints) then waits here instead
/// of piling up transfers whose timeouts run out in libcurl's queue. Also measures how late probes start
/// against their schedule.
///
/// Included files' endpoints share at most ``maximumIncludedInFlight`` of the room, and the main file's due
/// probes start first: 300 included endpoints whose servers never answer (timeouts as long as their intervals)
/// held all 256 places, and a main-file pinned endpoint behind an interceptor was never probed.
///
/// A value with no locking: the agent's actor owns it.
struct ProbeAdmission {
    /// Full handshakes cost about 1.5 ms of CPU each here: 256 at once already keep two cores busy.
    static let maximumInFlight = 256
    /// The room included files' endpoints may take together: the main file's always have the rest.
    static let maximumIncludedInFlight = 192

    /// The running probes, with whether each is an included file's.
    private var running: [String: (task: Task<Void, Never>, included: Bool)] = [:]
    private var includedRunning = 0
    /// Due probes waiting for room, the main file's and the included files'.
    private var mainWaiting = WaitQueue()
    private var includedWaiting = WaitQueue()
    /// How late probes started against their schedule.
    private(set) var lateness = LatenessSamples()

    /// Whether no probe runs.
    var isIdle: Bool { running.isEmpty }

    /// Whether `name`'s probe runs now.
    func isRunning(_ name: String) -> Bool { running[name] != nil }

    /// Whether a probe due at `due` may start now; when its room is taken it is queued instead (once per
    /// endpoint), for ``nextWaiting()``.
    mutating func admit(_ name: String, due: ContinuousClock.Instant, included: Bool) -> Bool {
        if hasRoom(included: included) { return true }
        if included { includedWaiting.append(name, due) } else { mainWaiting.append(name, due) }
        return false
    }

    /// Records a started probe; `due`, when given, counts toward the lateness.
    mutating func started(_ name: String, task: Task<Void, Never>, due: ContinuousClock.Instant?, included: Bool) {
        if let due { lateness.record(due.duration(to: .now)) }
        if let previous = running.updateValue((task, included), forKey: name), previous.included { includedRunning -= 1 }
        if included { includedRunning += 1 }
    }

    /// Records a probe that reported back: its room is free.
    mutating func finished(_ name: String) {
        if let finished = running.removeValue(forKey: name), finished.included { includedRunning -= 1 }
    }

    /// The oldest queued probe that may start now, the main file's first, or `nil` when there is no room or
    /// nothing waits.
    mutating func nextWaiting() -> (name: String, due: ContinuousClock.Instant, included: Bool)? {
        while hasRoom(included: false), let next = mainWaiting.popFirst() {
            if running[next.name] == nil { return (next.name, next.due, false) }
        }
        while hasRoom(included: true), let next = includedWaiting.popFirst() {
            if running[next.name] == nil { return (next.name, next.due, true) }
        }
        return nil
    }

    /// Forgets the queued probes: not started, nothing to wait for.
    mutating func dropWaiting() {
        mainWaiting = WaitQueue()
        includedWaiting = WaitQueue()
    }

    /// Cancels `name`'s running probe, if any (its transfer stops; it reports, and its room frees, as it ends).
    func cancel(_ name: String) { running[name]?.task.cancel() }

    /// Cancels the running probes (their transfers stop).
    func cancelRunning() {
        for probe in running.values { probe.task.cancel() }
    }

    private func hasRoom(included: Bool) -> Bool {
        running.count < Self.maximumInFlight && (!included || includedRunning < Self.maximumIncludedInFlight)
    }
}

/// Due probes waiting for room, oldest first, each endpoint once.
private struct WaitQueue {
    private var entries: [(name: String, due: ContinuousClock.Instant)] = []
    private var head = 0
    private var names = Set<String>()

    mutating func append(_ name: String, _ due: ContinuousClock.Instant) {
        if names.insert(name).inserted { entries.append((name, due)) }
    }

    mutating func popFirst() -> (name: String, due: ContinuousClock.Instant)? {
        guard head < entries.count else { return nil }
        let next = entries[head]
        head += 1
        names.remove(next.name)
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        }
        return next
    }
}
