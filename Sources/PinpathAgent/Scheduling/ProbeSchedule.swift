/// When one endpoint is probed: every `interval`, at a stable offset into the interval derived from the
/// endpoint's name. Pure arithmetic on times measured from an origin that ``ProbeScheduler`` chooses.
///
/// The offset comes from FNV-1a over the name's UTF-8, not Swift's `Hasher`, which is seeded differently in
/// every process: the same name keeps the same offset across restarts, so a restart does not probe every
/// endpoint at once, and different names spread over the interval.
struct ProbeSchedule: Sendable, Hashable {
    /// How often the endpoint is probed.
    let interval: Duration
    /// Where in each interval the probes fall, in `[0, interval)`.
    let offset: Duration

    /// - Parameters:
    ///   - endpoint: the endpoint's name, which fixes its offset.
    ///   - interval: how often; at least a nanosecond.
    init(endpoint: String, interval: Duration) {
        let nanoseconds = interval.wholeNanoseconds
        precondition(nanoseconds > 0, "a probe interval must be positive")
        self.init(interval: interval, offset: .nanoseconds(Int64(Self.stableHash(endpoint) % UInt64(nanoseconds))))
    }

    /// A schedule with a given offset (tests use round ones).
    init(interval: Duration, offset: Duration) {
        self.interval = interval
        self.offset = offset
    }

    /// The first probe time strictly after `time`: `offset + k × interval` for the smallest such `k`.
    /// Times are durations since the scheduler's origin and may be negative.
    func nextDue(after time: Duration) -> Duration {
        let period = interval.wholeNanoseconds
        let sinceFirst = (time - offset).wholeNanoseconds
        // Floor division, so that times before the first probe land on the right period too.
        var periods = sinceFirst / period
        if sinceFirst < 0 && sinceFirst % period != 0 { periods -= 1 }
        return offset + .nanoseconds((periods + 1) * period)
    }

    /// How late a probe started: 0 when on time or early.
    static func lateness(due: Duration, started: Duration) -> Duration {
        max(.zero, started - due)
    }

    /// Offsets in `[0, window)` for probing all of `endpoints` "at once" without a burst: evenly spaced, in
    /// an order fixed by the names' stable hashes (so the same set always comes in the same order, whatever
    /// order it is given in).
    static func spread(_ endpoints: [String], over window: Duration) -> [(endpoint: String, offset: Duration)] {
        let ordered = endpoints.map { (stableHash($0), $0) }.sorted { $0 < $1 }
        let step = window.wholeNanoseconds / Int64(max(ordered.count, 1))
        return ordered.enumerated().map { index, entry in (entry.1, .nanoseconds(Int64(index) * step)) }
    }

    /// 64-bit FNV-1a of the UTF-8 bytes.
    static func stableHash(_ name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
