import PinpathHTTP
import PinpathReachability
import Synchronization

/// The agent's current metrics, kept up to date by the agent's loop and the monitor's callback, read by the
/// `/metrics` server and the textfile writer. Readers take a ``MetricsSnapshot`` copy under a short lock and
/// render without it, so a scrape never holds up a probe's result (and rendering 10,000 endpoints happens off
/// the agent's actor).
///
/// Safe from any thread: the state sits behind a `Mutex`, touched by the agent's actor, the monitor's thread
/// and NIO's event loop.
final class MetricsStore: Sendable {
    private struct State {
        /// Each endpoint's metrics and lines in configuration order, so that a snapshot copies two arrays (a
        /// reference each) rather than looking up and copying 10,000 entries under the lock.
        var endpoints: [MetricsSnapshot.Endpoint] = []
        var rendered: [RenderedEndpoint] = []
        /// Where each endpoint is in those arrays.
        var position: [String: Int] = [:]
        /// The agent has sent its endpoints (at start, even none): until then an empty list means "not yet".
        var endpointsKnown = false
        var snapshot = MetricsSnapshot()
        /// Bumped by every change, so that the textfile is rewritten only when something changed.
        var version = 0
    }

    private let state = Mutex(State())
    /// The `/probe` route's counters and in-flight count, kept by the listener.
    let probeRoute = ProbeRouteMetrics()
    /// The events writer's drop counters, read at each snapshot (the writer counts them on its own thread).
    private let eventsDropped: @Sendable () -> EventWriterThread.Statistics

    /// - Parameter eventsDropped: the writer's counters, for `pinpath_events_dropped_total`.
    init(eventsDropped: @escaping @Sendable () -> EventWriterThread.Statistics) {
        self.eventsDropped = eventsDropped
    }

    /// The metrics now, with their ``version``.
    func snapshot() -> (snapshot: MetricsSnapshot, version: Int) {
        let statistics = eventsDropped()
        var (snapshot, version) = state.withLock { state in
            var snapshot = state.snapshot
            snapshot.endpoints = state.endpoints
            snapshot.rendered = state.rendered
            return (snapshot, state.version)
        }
        snapshot.eventsDropped = [("queue_full", statistics.droppedQueueFull), ("write_failed", statistics.droppedWriteFailed)]
        snapshot.probeRoute = probeRoute.snapshot()
        return (snapshot, Self.version(version &+ probeRoute.version, statistics))
    }

    /// A number that changes whenever the metrics do, without copying them: for the textfile writer.
    var version: Int { Self.version(state.withLock { $0.version } &+ probeRoute.version, eventsDropped()) }

    /// The drops change without the store knowing: part of the version, so that the textfile follows them.
    private static func version(_ stored: Int, _ statistics: EventWriterThread.Statistics) -> Int {
        stored &* 1_000_003 &+ statistics.dropped
    }

    /// Whether `/readyz` says ready: the endpoints known, the first path snapshot taken and every endpoint with
    /// its first result.
    var isReady: Bool {
        state.withLock { state in
            state.endpointsKnown && state.snapshot.pathStatus != nil && state.endpoints.allSatisfy(\.hasFirstResult)
        }
    }

    /// Applies what the endpoints' registry says changed: a new order (after a reload, or at start) replaces every
    /// endpoint, otherwise the changed ones are updated in place.
    /// The endpoints' sample lines are rendered here, before the lock: once per change rather than once per scrape.
    func update(order: [String]?, endpoints: [MetricsSnapshot.Endpoint], probes: Int) {
        guard order != nil || !endpoints.isEmpty else { return }
        let rendered = endpoints.map(RenderedEndpoint.init)
        state.withLock { state in
            if order != nil {
                // The registry sends every endpoint, in order, with a new order.
                state.endpoints = endpoints
                state.endpointsKnown = true
                state.rendered = rendered
                state.position = Dictionary(endpoints.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { $1 })
            } else {
                for (endpoint, lines) in zip(endpoints, rendered) {
                    guard let index = state.position[endpoint.name] else { continue }
                    state.endpoints[index] = endpoint
                    state.rendered[index] = lines
                }
            }
            state.snapshot.probes = probes
            state.version &+= 1
        }
    }

    /// Records how late a probe started against its schedule.
    func observeLateness(_ lateness: Duration) {
        let seconds = Double(lateness.components.seconds) + Double(lateness.components.attoseconds) * 1e-18
        state.withLock { state in
            state.snapshot.lateness.observe(seconds)
            state.version &+= 1
        }
    }

    /// Takes the monitor's snapshot of the path and the watched targets.
    func update(path: NetworkPath) {
        state.withLock { state in
            state.snapshot.pathStatus = path.status
            state.snapshot.targets = path.targets.map { ($0.target, $0.status == .reachable) }
            state.version &+= 1
        }
    }

    /// Takes the connectivity check's verdict.
    func update(connectivity verdict: ConnectivityVerdict) {
        state.withLock { state in
            state.snapshot.connectivity = (verdict.state, verdict.timings?.total)
            state.version &+= 1
        }
    }

    /// Counts a pin failure seen by a probe of a module's target (`/probe`), under the module's name.
    func targetPinFailed(module: String, enforced: Bool) {
        state.withLock { state in
            var counts = state.snapshot.targetPinFailures
            let index =
                counts.firstIndex { $0.module == module }
                ?? {
                    counts.append((module, 0, 0))
                    return counts.count - 1
                }()
            if enforced { counts[index].enforced += 1 } else { counts[index].reportOnly += 1 }
            state.snapshot.targetPinFailures = counts
            state.version &+= 1
        }
    }

    /// Counts a failed write of the metrics textfile.
    /// A request to the metrics listener was refused for its credentials: `missing` (none, or not Basic) or
    /// `wrong` (an unknown user or a wrong password), for `pinpath_metrics_auth_failures_total`.
    func listenerAuthFailed(reason: String) {
        state.withLock { state in
            state.snapshot.listenerAuthFailures[reason, default: 0] += 1
            state.version &+= 1
        }
    }

    func textfileWriteFailed() {
        state.withLock { state in
            state.snapshot.textfileWriteFailures += 1
            state.version &+= 1
        }
    }
}
