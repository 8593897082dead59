import Glibc
import Testing

@testable import PinpathAgent

@Suite("Probe scheduler")
struct ProbeSchedulerTests {
    let origin = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { origin.advanced(by: .seconds(seconds)) }

    /// Takes everything due up to `seconds`, as the agent's loop would if it woke then.
    func takeAll(_ scheduler: inout ProbeScheduler, at seconds: Double) -> [ProbeScheduler.DueProbe] {
        var taken: [ProbeScheduler.DueProbe] = []
        while let due = scheduler.takeDue(now: at(seconds)) { taken.append(due) }
        return taken
    }

    @Test("Endpoints come due at their offsets, earliest first, then every interval")
    func order() throws {
        var scheduler = ProbeScheduler(origin: origin)
        let names = ["alpha", "beta", "gamma"]
        for name in names { scheduler.add(name, interval: .seconds(10), now: origin) }
        let offsets = names.map { ProbeSchedule(endpoint: $0, interval: .seconds(10)).offset }
        #expect(scheduler.nextDue == origin.advanced(by: try #require(offsets.min())))
        #expect(scheduler.takeDue(now: origin) == nil || offsets.contains(.zero))

        let first = takeAll(&scheduler, at: 10)
        #expect(first.map(\.endpoint) == names.sorted { offsets[names.firstIndex(of: $0)!] < offsets[names.firstIndex(of: $1)!] })
        #expect(first.allSatisfy { $0.lateness == $0.due.duration(to: at(10)) })
        #expect(takeAll(&scheduler, at: 10).isEmpty)
        let second = takeAll(&scheduler, at: 20)
        #expect(second.map(\.endpoint) == first.map(\.endpoint))
        #expect(zip(first, second).allSatisfy { $0.due.duration(to: $1.due) == .seconds(10) })
    }

    @Test("A loop that ran late by several intervals probes each endpoint once, then returns to its slots")
    func missedSlots() throws {
        var scheduler = ProbeScheduler(origin: origin)
        scheduler.add("api", interval: .seconds(10), now: origin)
        let offset = ProbeSchedule(endpoint: "api", interval: .seconds(10)).offset
        let late = takeAll(&scheduler, at: 45)
        #expect(late.count == 1)
        #expect(late.first?.due == origin.advanced(by: offset))
        #expect(late.first?.lateness == origin.advanced(by: offset).duration(to: at(45)))
        let next = try #require(scheduler.nextDue)
        #expect(next > at(45) && next <= at(55))
        #expect(
            origin.advanced(by: offset).duration(to: next) == .seconds(40) || origin.advanced(by: offset).duration(to: next) == .seconds(50)
        )
    }

    @Test("A suspended endpoint is not handed out; probeSoon spreads the affected ones over a second")
    func suspendAndResume() throws {
        var scheduler = ProbeScheduler(origin: origin)
        let names = (0..<4).map { "endpoint-\($0)" }
        for name in names { scheduler.add(name, interval: .seconds(60), now: origin) }
        for name in names.prefix(3) { scheduler.suspend(name) }
        #expect(scheduler.isSuspended("endpoint-0") && !scheduler.isSuspended("endpoint-3"))
        #expect(scheduler.due("endpoint-0") == nil)
        #expect(takeAll(&scheduler, at: 60).map(\.endpoint) == ["endpoint-3"])
        _ = takeAll(&scheduler, at: 70)

        scheduler.probeSoon(Array(names.prefix(3)) + ["unknown"], now: at(70))
        #expect(!scheduler.isSuspended("endpoint-0"))
        #expect(scheduler.nextDue == at(70))
        let soon = takeAll(&scheduler, at: 71)
        #expect(Set(soon.map(\.endpoint)) == Set(names.prefix(3)))
        let dues = soon.map { at(70).duration(to: $0.due) }
        #expect(dues == [.zero, .nanoseconds(333_333_333), .nanoseconds(666_666_666)])
        for name in names.prefix(3) {
            let due = try #require(scheduler.due(name))
            let offset = ProbeSchedule(endpoint: name, interval: .seconds(60)).offset
            // Back on its own slots: the same phase as before.
            #expect((origin.duration(to: due) - offset).wholeNanoseconds % 60_000_000_000 == 0)
        }
    }

    @Test("Removing and changing intervals keep the heap in order")
    func removeAndChange() {
        var scheduler = ProbeScheduler(origin: origin)
        for index in 0..<50 { scheduler.add("e\(index)", interval: .seconds(30), now: origin) }
        for index in stride(from: 0, to: 50, by: 3) { scheduler.remove("e\(index)") }
        scheduler.remove("never-added")
        scheduler.add("e1", interval: .seconds(5), now: origin)
        scheduler.add("e2", interval: .seconds(30), now: origin)  // same interval: nothing changes
        #expect(scheduler.count == 33)
        #expect(scheduler.schedule(of: "e1")?.interval == .seconds(5))
        for index in 50..<60 { scheduler.add("e\(index)", interval: .seconds(30), now: origin) }  // reuses slots
        let taken = takeAll(&scheduler, at: 30)
        #expect(zip(taken, taken.dropFirst()).allSatisfy { $0.due <= $1.due })
        #expect(taken.filter { $0.endpoint == "e1" }.count == 1)
        #expect(Set(taken.map(\.endpoint)).count == 43)
        #expect(!taken.contains { $0.endpoint == "e0" || $0.endpoint == "e3" })
    }

    @Test("10,000 endpoints: each handed out once per interval, in due order")
    func many() {
        var scheduler = ProbeScheduler(origin: origin)
        for index in 0..<10_000 { scheduler.add("endpoint-\(index)", interval: .seconds(60), now: origin) }
        var previous = origin
        var seen = Set<String>()
        // The loop wakes every 100 ms, as a busy agent would.
        for tick in 0...600 {
            while let due = scheduler.takeDue(now: at(Double(tick) / 10)) {
                #expect(due.due >= previous)
                previous = due.due
                seen.insert(due.endpoint)
            }
        }
        #expect(seen.count == 10_000)
        #expect(scheduler.nextDue.map { $0 > at(60) } == true)
    }

    @Test("The wall-clock origin is the Unix epoch on the continuous clock")
    func wallClockOrigin() {
        let now = ContinuousClock.now
        let origin = ProbeScheduler.wallClockAlignedOrigin(now: now)
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let realtime = Duration.seconds(spec.tv_sec) + .nanoseconds(spec.tv_nsec)
        #expect(abs(Double((origin.duration(to: now) - realtime).wholeNanoseconds)) < 1e9)
    }
}
