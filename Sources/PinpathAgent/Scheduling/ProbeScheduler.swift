import Glibc

/// Which endpoint is due next, for many endpoints: a binary min-heap of due times, O(log n) to add, remove,
/// reschedule or take one, O(1) to read the next due time (the agent's loop sleeps until then).
///
/// Time is passed in, never read (except by ``wallClockAlignedOrigin(now:)``), so tests are pure. An
/// endpoint taken with ``takeDue(now:)`` is rescheduled at once to its next slot after `now`: if the loop
/// ran late by more than an interval, the missed slots are skipped rather than probed in a burst. A probe
/// still running when its endpoint comes up again is the loop's to skip.
///
/// A value type with no locking: one task (the agent's loop) owns it.
struct ProbeScheduler: Sendable {
    /// The clock the scheduler counts in: it keeps counting while the machine sleeps.
    typealias Instant = ContinuousClock.Instant

    /// An endpoint handed out by ``takeDue(now:)``.
    struct DueProbe: Sendable, Equatable {
        /// The endpoint's name.
        let endpoint: String
        /// When it was due.
        let due: Instant
        /// How long after `due` it was taken: the loop's delay, for a metric or a debug line.
        let lateness: Duration
    }

    private struct Entry {
        var endpoint: String
        var schedule: ProbeSchedule
        var due: Instant
        /// The entry's index in `heap`, or nil while suspended.
        var heapIndex: Int?
    }

    /// The instant that probe times are counted from (time 0 of each ``ProbeSchedule``).
    let origin: Instant
    /// Entries by slot; a removed entry's slot is reused, so slots stay dense.
    private var entries: [Entry?] = []
    private var freeSlots: [Int] = []
    private var slots: [String: Int] = [:]
    /// Slots ordered as a min-heap on (due, slot).
    private var heap: [Int] = []

    /// - Parameter origin: time 0 of every schedule. Use ``wallClockAlignedOrigin(now:)`` so an endpoint
    ///   keeps the same phase across restarts, or any instant in tests.
    init(origin: Instant) {
        self.origin = origin
    }

    /// An origin at which CLOCK_REALTIME read 0 (the Unix epoch): slots then fall at the same wall-clock
    /// phase in every run (a 60 s endpoint at the same second of every minute), so restarts do not burst.
    static func wallClockAlignedOrigin(now: Instant = .now) -> Instant {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return now.advanced(by: .zero - (.seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)))
    }

    /// How many endpoints are scheduled, suspended ones included.
    var count: Int { slots.count }

    /// The earliest due time among endpoints that are not suspended, or nil when there is none.
    var nextDue: Instant? { heap.first.map { entries[$0]!.due } }

    /// The endpoint's schedule, or nil if it is not known.
    func schedule(of endpoint: String) -> ProbeSchedule? {
        slots[endpoint].map { entries[$0]!.schedule }
    }

    /// When the endpoint is next due, or nil if it is unknown or suspended.
    func due(_ endpoint: String) -> Instant? {
        slots[endpoint].flatMap { entries[$0]!.heapIndex == nil ? nil : entries[$0]!.due }
    }

    /// Whether the endpoint is known and suspended.
    func isSuspended(_ endpoint: String) -> Bool {
        slots[endpoint].map { entries[$0]!.heapIndex == nil } ?? false
    }

    /// Adds an endpoint at its first slot after `now`, or changes its interval (a reload). An endpoint
    /// already known with the same interval keeps its due time and its suspension.
    mutating func add(_ endpoint: String, interval: Duration, now: Instant) {
        let schedule = ProbeSchedule(endpoint: endpoint, interval: interval)
        let due = origin.advanced(by: schedule.nextDue(after: origin.duration(to: now)))
        if let slot = slots[endpoint] {
            guard entries[slot]!.schedule != schedule else { return }
            entries[slot]!.schedule = schedule
            if entries[slot]!.heapIndex != nil { reschedule(slot, at: due) }
            return
        }
        let slot = freeSlots.popLast() ?? entries.count
        let entry = Entry(endpoint: endpoint, schedule: schedule, due: due, heapIndex: nil)
        if slot == entries.count { entries.append(entry) } else { entries[slot] = entry }
        slots[endpoint] = slot
        insert(slot)
    }

    /// Forgets an endpoint (a reload removed it). Unknown names are ignored.
    mutating func remove(_ endpoint: String) {
        guard let slot = slots.removeValue(forKey: endpoint) else { return }
        if entries[slot]!.heapIndex != nil { detach(slot) }
        entries[slot] = nil
        freeSlots.append(slot)
    }

    /// Stops handing out an endpoint (its path or target is not reachable) until ``probeSoon(_:now:window:)``.
    mutating func suspend(_ endpoint: String) {
        guard let slot = slots[endpoint], entries[slot]!.heapIndex != nil else { return }
        detach(slot)
    }

    /// Makes endpoints due within `window` from `now`, evenly spread (``ProbeSchedule/spread(_:over:)``),
    /// resuming suspended ones: "when the path comes back, every affected endpoint is probed at once, spread
    /// over a second". After that probe each returns to its own slots. Unknown names are ignored.
    mutating func probeSoon(_ endpoints: [String], now: Instant, window: Duration = .seconds(1)) {
        for (endpoint, offset) in ProbeSchedule.spread(endpoints.filter { slots[$0] != nil }, over: window) {
            let slot = slots[endpoint]!
            let due = now.advanced(by: offset)
            if entries[slot]!.heapIndex == nil {
                entries[slot]!.due = due
                insert(slot)
            } else {
                reschedule(slot, at: due)
            }
        }
    }

    /// Hands out one endpoint whose due time is at or before `now`, the earliest first, and reschedules it
    /// to its next slot after `now`. Returns nil when none is due: sleep until ``nextDue``.
    mutating func takeDue(now: Instant) -> DueProbe? {
        guard let slot = heap.first, entries[slot]!.due <= now else { return nil }
        let entry = entries[slot]!
        reschedule(slot, at: origin.advanced(by: entry.schedule.nextDue(after: origin.duration(to: now))))
        return DueProbe(endpoint: entry.endpoint, due: entry.due, lateness: entry.due.duration(to: now))
    }

    // MARK: The heap

    private func precedes(_ a: Int, _ b: Int) -> Bool {
        let (left, right) = (entries[a]!.due, entries[b]!.due)
        return left < right || (left == right && a < b)
    }

    private mutating func insert(_ slot: Int) {
        heap.append(slot)
        entries[slot]!.heapIndex = heap.count - 1
        siftUp(heap.count - 1)
    }

    private mutating func detach(_ slot: Int) {
        let index = entries[slot]!.heapIndex!
        let last = heap.removeLast()
        entries[slot]!.heapIndex = nil
        guard index < heap.count else { return }
        heap[index] = last
        entries[last]!.heapIndex = index
        siftDown(siftUp(index))
    }

    private mutating func reschedule(_ slot: Int, at due: Instant) {
        entries[slot]!.due = due
        let index = entries[slot]!.heapIndex!
        siftDown(siftUp(index))
    }

    /// Moves the slot at `index` up while it precedes its parent; returns where it ended.
    @discardableResult
    private mutating func siftUp(_ index: Int) -> Int {
        var index = index
        while index > 0 {
            let parent = (index - 1) / 2
            guard precedes(heap[index], heap[parent]) else { break }
            swapAt(index, parent)
            index = parent
        }
        return index
    }

    private mutating func siftDown(_ index: Int) {
        var index = index
        while true {
            let left = 2 * index + 1
            let right = left + 1
            var first = index
            if left < heap.count && precedes(heap[left], heap[first]) { first = left }
            if right < heap.count && precedes(heap[right], heap[first]) { first = right }
            guard first != index else { return }
            swapAt(index, first)
            index = first
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        entries[heap[a]]!.heapIndex = a
        entries[heap[b]]!.heapIndex = b
    }
}
