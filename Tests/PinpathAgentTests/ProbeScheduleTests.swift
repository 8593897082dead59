import Testing

@testable import PinpathAgent

@Suite("Probe schedule")
struct ProbeScheduleTests {
    @Test(
        "The stable hash is 64-bit FNV-1a",
        arguments: [
            ("", 0xcbf2_9ce4_8422_2325 as UInt64), ("a", 0xaf63_dc4c_8601_ec8c), ("foobar", 0x8594_4171_f739_67e8),
        ])
    func fnv(name: String, hash: UInt64) {
        #expect(ProbeSchedule.stableHash(name) == hash)
    }

    @Test("The offset depends on the name only and lies in [0, interval)")
    func offset() {
        let interval = Duration.seconds(60)
        let first = ProbeSchedule(endpoint: "api", interval: interval)
        #expect(first.offset == ProbeSchedule(endpoint: "api", interval: interval).offset)
        #expect(first.offset == .nanoseconds(Int64(ProbeSchedule.stableHash("api") % 60_000_000_000)))
        for index in 0..<1000 {
            let offset = ProbeSchedule(endpoint: "endpoint-\(index)", interval: interval).offset
            #expect(offset >= .zero && offset < interval)
        }
    }

    @Test("Similar names spread over the interval: each tenth of it gets some")
    func spreadOfOffsets() {
        var tenths = Set<Int64>()
        for index in 0..<200 {
            let offset = ProbeSchedule(endpoint: "endpoint-\(index)", interval: .seconds(10)).offset
            tenths.insert(offset.wholeNanoseconds / 1_000_000_000)
        }
        #expect(tenths == Set(0..<10))
    }

    /// Times in seconds from the origin, for a 10 s interval whose offset is replaced by `offset`.
    @Test(
        "The next due time is the first slot strictly after the time",
        arguments: [
            (3, -25, -17), (3, -7, 3), (3, 0, 3), (3, 2.9, 3), (3, 3, 13), (3, 12.5, 13), (3, 13, 23), (0, 0, 10),
            (0, -10, 0), (9.5, 100, 109.5),
        ] as [(Double, Double, Double)])
    func nextDue(offset: Double, time: Double, due: Double) {
        let schedule = ProbeSchedule(interval: .seconds(10), offset: .seconds(offset))
        #expect(schedule.nextDue(after: .seconds(time)) == .seconds(due))
    }

    @Test("Endpoints probed at once are spaced evenly over the window, in an order that ignores input order")
    func spread() {
        let names = ["a", "b", "c", "d"]
        let spread = ProbeSchedule.spread(names, over: .seconds(1))
        #expect(spread.map(\.offset) == [.zero, .milliseconds(250), .milliseconds(500), .milliseconds(750)])
        #expect(Set(spread.map(\.endpoint)) == Set(names))
        #expect(ProbeSchedule.spread(names.reversed(), over: .seconds(1)).map(\.endpoint) == spread.map(\.endpoint))
        #expect(ProbeSchedule.spread([], over: .seconds(1)).isEmpty)
    }

    @Test("Lateness is how long after its due time a probe started, never negative")
    func lateness() {
        #expect(ProbeSchedule.lateness(due: .seconds(5), started: .milliseconds(5_250)) == .milliseconds(250))
        #expect(ProbeSchedule.lateness(due: .seconds(5), started: .seconds(4)) == .zero)
    }
}
