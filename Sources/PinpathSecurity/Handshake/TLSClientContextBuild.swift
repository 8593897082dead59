import Synchronization

/// One look-up or build of a ``TLSClientContext`` under way on the blocking pool, which the tasks asking for the
/// same terms meanwhile await, each until its own deadline: a build stuck on its files (a file system that does
/// not answer) holds one pool thread, never a task past its deadline nor a thread of Swift's concurrency pool.
final class TLSClientContextBuild: Sendable {
    /// How a wait ended.
    enum Wait {
        case finished(Result<TLSClientContext, SecurityError>)
        case deadlinePassed
        case cancelled
    }

    private struct State {
        var result: Result<TLSClientContext, SecurityError>?
        var waiters: [Int: CheckedContinuation<Wait, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    /// Hands `result` to every task waiting and to those that come later.
    func finish(_ result: Result<TLSClientContext, SecurityError>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters.removeAll() }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume(returning: .finished(result)) }
    }

    /// The result, once the build has finished; or how the wait ended first: `deadline` passed, or the task was
    /// cancelled. The build goes on either way.
    func result(until deadline: ContinuousClock.Instant) async -> Wait {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        var timer: Task<Void, Never>?
        let wait = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Wait, Never>) in
                let finished = state.withLock { state in
                    if state.result == nil { state.waiters[id] = continuation }
                    return state.result
                }
                if let finished { return continuation.resume(returning: .finished(finished)) }
                // Started once the waiter is registered, so that it cannot fire before and miss it; a task
                // asleep holds no thread.
                timer = Task {
                    guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                    self.endWait(id, .deadlinePassed)
                }
                // Cancelled before the waiter was registered: the handler found nothing to end.
                if Task.isCancelled { endWait(id, .cancelled) }
            }
        } onCancel: {
            endWait(id, .cancelled)
        }
        timer?.cancel()
        return wait
    }

    /// Ends waiter `id`'s wait with `wait`, unless it has already ended.
    private func endWait(_ id: Int, _ wait: Wait) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: wait)
    }
}
