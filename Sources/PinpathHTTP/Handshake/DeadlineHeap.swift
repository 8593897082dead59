/// The handshake loop's deadlines: a binary min-heap of (instant, check serial), so that the next one is found
/// in O(1) and 10,000 checks cost O(log n) per change, not a scan per turn.
///
/// Entries are never removed early: a check whose deadline moves pushes a new entry, and the loop drops an entry
/// it pops when the check is gone or has another deadline by then (``HandshakeLoop``).
struct DeadlineHeap {
    struct Entry {
        let instant: ContinuousClock.Instant
        let serial: UInt64
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    /// The earliest entry.
    var first: Entry? { entries.first }

    mutating func insert(_ instant: ContinuousClock.Instant, serial: UInt64) {
        entries.append(Entry(instant: instant, serial: serial))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].instant < entries[parent].instant else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry.
    mutating func removeFirst() -> Entry? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let first = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { break }
            let right = left + 1
            let smaller = right < entries.count && entries[right].instant < entries[left].instant ? right : left
            guard entries[smaller].instant < entries[parent].instant else { break }
            entries.swapAt(smaller, parent)
            parent = smaller
        }
        return first
    }

    mutating func removeAll() { entries.removeAll() }
}
