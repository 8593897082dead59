import PinpathSupport
import Synchronization

/// A value delivered once, from any thread, to every async waiter. The first `fulfil` wins; later ones are
/// ignored, which is what a race between an answer and its timeout needs.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [CheckedContinuation<Value, Never>] = []
    }
    private let state = Mutex(State())

    func fulfil(_ value: Value) {
        let waiters = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        SanitizerEdge.release(self)  // what made `value` on this thread, for the waiters (ThreadSanitizer cannot see it)
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// Whether a value was delivered: work whose answer would be ignored need not run.
    var isFulfilled: Bool { state.withLock { $0.value != nil } }

    /// Waits for the value (returns at once if it is there).
    func value() async -> Value {
        let value = await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if state.value == nil { state.waiters.append(continuation) }
                return state.value
            }
            if let ready { continuation.resume(returning: ready) }
        }
        SanitizerEdge.acquire(self)
        return value
    }
}
