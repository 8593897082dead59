import PinpathSupport

/// How late probes start against their schedule: a ring of the most recent samples, for the percentiles
/// `agent.stopping` reports (the agent's p99 lateness is one of its figures).
struct LatenessSamples: Sendable {
    /// Enough for an hour of 10,000 endpoints at a 60 s interval; 2.4 MB at most.
    static let capacity = 600_000
    private var samples: [Int32] = []
    private var next = 0

    mutating func record(_ lateness: Duration) {
        let microseconds = Int32(clamping: lateness.wholeMicroseconds)
        if samples.count < Self.capacity {
            samples.append(microseconds)
        } else {
            samples[next] = microseconds
            next = (next + 1) % Self.capacity
        }
    }

    /// `{"samples", "p50", "p99", "max"}` in milliseconds, or `null` before the first probe.
    var json: JSONValue {
        guard !samples.isEmpty else { return .null }
        let sorted = samples.sorted()
        func milliseconds(_ value: Int32) -> JSONValue { .double(Double(value) / 1000) }
        func percentile(_ p: Double) -> JSONValue { milliseconds(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) }
        return .object([
            ("samples", .int(sorted.count)), ("p50", percentile(0.5)), ("p99", percentile(0.99)), ("max", milliseconds(sorted.last!)),
        ])
    }
}
