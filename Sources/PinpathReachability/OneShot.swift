import Synchronization

/// A value delivered once, from any thread, to one async waiter. The first `fulfil` wins; later ones are
/// ignored, which is what a race between an answer and its timeout needs.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiter: CheckedContinuation<Value, Never>?
    }
    private let state = Mutex(State())

    func fulfil(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            return state.waiter.take()
        }
        waiter?.resume(returning: value)
    }

    /// Waits for the value. Call once.
    func value() async -> Value {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if state.value == nil { state.waiter = continuation }
                return state.value
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
