import PinpathSupport
import Testing

/// The agent's loop sleep: woken early, at its deadline, never by a stale timer, never losing a wake.
@Suite("Wakeable sleep")
struct WakeableSleepTests {
    /// How long `body` took.
    func timed(_ body: () async -> Void) async -> Duration {
        let start = ContinuousClock.now
        await body()
        return start.duration(to: .now)
    }

    @Test("A sleep ends at its deadline, or at once when woken")
    func deadlineOrWake() async {
        let sleep = WakeableSleep()
        let slept = await timed { await sleep.sleep(until: .now + .milliseconds(100), tolerance: .milliseconds(1)) }
        #expect(slept >= .milliseconds(100) && slept < .seconds(5))

        async let woken: Duration = timed { await sleep.sleep(until: nil, tolerance: .milliseconds(1)) }
        try? await Task.sleep(for: .milliseconds(50))
        sleep.wake()
        #expect(await woken < .seconds(5), "a sleep without a deadline ends when woken")
    }

    @Test("A wake while nobody sleeps ends the next sleep at once, and only that one")
    func wakeBeforeSleepIsKept() async {
        let sleep = WakeableSleep()
        sleep.wake()
        sleep.wake()
        let first = await timed { await sleep.sleep(until: .now + .seconds(10), tolerance: .milliseconds(1)) }
        #expect(first < .seconds(1))
        let second = await timed { await sleep.sleep(until: .now + .milliseconds(200), tolerance: .milliseconds(1)) }
        #expect(second >= .milliseconds(200), "two wakes before one sleep are one wake")
    }

    @Test("The timer of a sleep that was woken early does not end the next sleep")
    func staleTimerWakesNothing() async {
        let sleep = WakeableSleep()
        // The first sleep's timer is due at 100 ms; it is woken at once, and the next sleep lasts 400 ms.
        async let first: Void = sleep.sleep(until: .now + .milliseconds(100), tolerance: .milliseconds(1))
        try? await Task.sleep(for: .milliseconds(20))
        sleep.wake()
        await first
        let second = await timed { await sleep.sleep(until: .now + .milliseconds(400), tolerance: .milliseconds(1)) }
        #expect(second >= .milliseconds(400))
    }
}
