import Synchronization

/// A loop's sleep that ends at its deadline or at ``wake()``, whichever comes first: an actor's loop sleeps in
/// it, and the actor's other methods wake it when there is something new to look at.
///
/// - A wake while nobody sleeps is kept for the next sleep, which then returns at once: the loop may be on its
///   way in (its `await` leaves the actor, so the actor can run a `wake()` before the sleep begins), and a
///   lost wake would leave it asleep until its deadline, or for ever. A spare wake costs one turn of the loop.
/// - Each sleep's timer ends that sleep only: a timer that outlives its sleep (cancelled because something else
///   woke it, or firing just as it was woken) must not end the next one, or every early wake would leave the
///   loop spinning, each stale timer ending the next sleep.
package final class WakeableSleep: Sendable {
    private struct State {
        var sleeper: CheckedContinuation<Void, Never>?
        /// Counts the sleeps, so that a timer can tell whether the sleep it was set for is still on.
        var number = 0
        var wokenWhileAwake = false
    }

    private let state = Mutex(State())

    package init() {}

    /// Sleeps until `deadline` (`nil`: until woken) or ``wake()``.
    package func sleep(until deadline: ContinuousClock.Instant?, tolerance: Duration) async {
        var timer: Task<Void, Never>?
        await withCheckedContinuation { continuation in
            let number: Int? = state.withLock { state in
                if state.wokenWhileAwake {
                    state.wokenWhileAwake = false
                    return nil
                }
                state.number += 1
                state.sleeper = continuation
                return state.number
            }
            guard let number else { return continuation.resume() }
            guard let deadline else { return }
            timer = Task { [weak self] in
                do {
                    try await Task.sleep(until: deadline, tolerance: tolerance)
                } catch {
                    return  // cancelled: its sleep is already over
                }
                self?.end(sleepNumber: number)
            }
        }
        timer?.cancel()
    }

    /// Ends the current sleep, or the next one if nobody sleeps.
    package func wake() {
        let sleeper = state.withLock { state in
            guard let sleeper = state.sleeper else {
                state.wokenWhileAwake = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.sleeper = nil
            return sleeper
        }
        sleeper?.resume()
    }

    /// Ends sleep number `number` if it is still on.
    private func end(sleepNumber number: Int) {
        let sleeper = state.withLock { state in
            guard state.number == number, let sleeper = state.sleeper else { return nil as CheckedContinuation<Void, Never>? }
            state.sleeper = nil
            return sleeper
        }
        sleeper?.resume()
    }
}
