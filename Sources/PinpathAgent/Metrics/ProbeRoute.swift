import Synchronization

/// What the metrics listener needs to serve `/probe`: the agent's probe, the in-flight limit, the route's counters,
/// and the probes running now, so that closing the listener ends them before its event loop goes.
final class ProbeRoute: Sendable {
    /// The agent's entry for one target probe (``Agent/probe(_:)``).
    typealias Probe = @Sendable (TargetProbeRequest) async -> TargetProbeAnswer

    let probe: Probe
    /// `metrics.probe_max_in_flight`.
    let maxInFlight: Int
    let metrics: ProbeRouteMetrics
    private let running = Mutex<(next: Int, tasks: [Int: Task<Void, Never>], closed: Bool)>((0, [:], false))

    init(probe: @escaping Probe, maxInFlight: Int, metrics: ProbeRouteMetrics) {
        self.probe = probe
        self.maxInFlight = maxInFlight
        self.metrics = metrics
        metrics.startServing()
    }

    /// Runs `request` in a task of its own, off the event loop, and calls `done` with the answer and the seconds it
    /// took; the in-flight slot (taken by the caller) is given back when the probe has returned, whether it ran to
    /// its end or was cancelled, so that a client going away frees it without letting probes outnumber the limit.
    /// - Returns: the task, for the connection to cancel when its client goes; nil once the route is closed.
    func start(
        _ request: TargetProbeRequest, done: @escaping @Sendable (TargetProbeAnswer, Double) -> Void
    ) -> Task<Void, Never>? {
        running.withLock { running -> Task<Void, Never>? in
            guard !running.closed else { return nil }
            let id = running.next
            running.next += 1
            let task = Task {
                let started = ContinuousClock.now
                let answer = await probe(request)
                let elapsed = (ContinuousClock.now - started).components
                let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
                metrics.release()
                metrics.answered(answer, module: request.module, seconds: seconds)
                _ = self.running.withLock { $0.tasks.removeValue(forKey: id) }
                done(answer, seconds)
            }
            running.tasks[id] = task
            return task
        }
    }

    /// Cancels the probes running and waits for them; no probe starts after.
    func close() async {
        let tasks = running.withLock { running in
            running.closed = true
            return Array(running.tasks.values)
        }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}
