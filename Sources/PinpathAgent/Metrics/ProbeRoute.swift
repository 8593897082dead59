import Synchronization

/// What the metrics listener needs to serve `/probe`: the agent's probe, the in-flight limit, the route's counters,
/// and the probes running now, so that closing the listener ends them before its event loop goes.
final class ProbeRoute: Sendable {
    /// The agent's entry for one target probe (``Agent/probe(_:)``).
    typealias Probe = @Sendable (TargetProbeRequest) async -> TargetProbeAnswer

    let probe: Probe
    /// `metrics.probe_max_in_flight`.
    let maxInFlight: Int
    /// How many of them one peer (``MetricsSlotTable/Peer``: a local user, an IPv4 address, an IPv6 /64) may hold:
    /// all but the last eighth (at least one place, unless the limit is 1), so one client cannot take every place.
    let maxInFlightPerPeer: Int
    let metrics: ProbeRouteMetrics
    private let running = Mutex<(next: Int, tasks: [Int: Task<Void, Never>], closed: Bool)>((0, [:], false))
    private let peers = Mutex<[MetricsSlotTable.Peer: Int]>([:])

    init(probe: @escaping Probe, maxInFlight: Int, metrics: ProbeRouteMetrics) {
        self.probe = probe
        self.maxInFlight = maxInFlight
        maxInFlightPerPeer = maxInFlight - min(maxInFlight - 1, max(1, maxInFlight / 8))
        self.metrics = metrics
        metrics.startServing()
    }

    /// Why a probe was not admitted.
    enum Refusal: Error {
        /// `metrics.probe_max_in_flight` probes run.
        case limit
        /// The peer holds its share (``maxInFlightPerPeer``) of them.
        case peerShare
    }

    /// Takes an in-flight place for `peer`, within its share and the limit; each refusal is counted (503).
    /// ``start(_:peer:done:)`` gives the place back when the probe ends, or the caller with ``release(_:)``.
    func admit(_ peer: MetricsSlotTable.Peer) throws(Refusal) {
        let withinShare = peers.withLock { counts in
            guard counts[peer, default: 0] < maxInFlightPerPeer else { return false }
            counts[peer, default: 0] += 1
            return true
        }
        guard withinShare else {
            metrics.overLimit()
            throw .peerShare
        }
        guard metrics.admit(limit: maxInFlight) else {
            releaseShare(of: peer)
            throw .limit
        }
    }

    /// Gives back a place ``admit(_:)`` took.
    func release(_ peer: MetricsSlotTable.Peer) {
        metrics.release()
        releaseShare(of: peer)
    }

    private func releaseShare(of peer: MetricsSlotTable.Peer) {
        peers.withLock { counts in
            let left = counts[peer, default: 1] - 1
            counts[peer] = left > 0 ? left : nil
        }
    }

    /// Runs `request` in a task of its own, off the event loop, and calls `done` with the answer and the seconds it
    /// took; the in-flight place (taken by the caller with ``admit(_:)``) is given back when the probe has returned, whether it ran to
    /// its end or was cancelled, so that a client going away frees it without letting probes outnumber the limit.
    /// - Returns: the task, for the connection to cancel when its client goes; nil once the route is closed.
    func start(
        _ request: TargetProbeRequest, peer: MetricsSlotTable.Peer, done: @escaping @Sendable (TargetProbeAnswer, Double) -> Void
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
                release(peer)
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
