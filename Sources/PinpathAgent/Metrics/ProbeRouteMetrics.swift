import Synchronization

/// What the `/probe` route did since the agent started, and how many of its probes run now: one count that is both
/// the in-flight limit (`metrics.probe_max_in_flight`) and the `pinpath_probe_in_flight` gauge.
///
/// Module names become labels only when the agent answered for a module it has (a probe ran, or its `targets:`
/// refused the target): an unknown module is a bad request, counted without the query's text, so no client can
/// grow the label set.
final class ProbeRouteMetrics: Sendable {
    /// How a request that reached the agent ended.
    enum Outcome: String, Sendable, CaseIterable {
        /// The probe ran and succeeded (`probe_success 1`).
        case success
        /// The probe ran and failed (`probe_success 0`).
        case failure
    }

    /// The counters at one moment.
    struct Snapshot: Sendable {
        /// Probes served, by module (sorted) and outcome.
        var served: [(module: String, outcome: Outcome, count: Int)] = []
        /// Targets refused (403), by module (sorted).
        var refused: [(module: String, count: Int)] = []
        /// Requests answered 400: a malformed query or header, an unknown module, a target the module cannot use.
        var badRequests = 0
        /// Requests answered 503: the in-flight limit, or the peer's share of it, was reached.
        var overLimit = 0
        /// Probes running now.
        var inFlight = 0
        /// How long the requests that reached the agent took.
        var durations = SecondsHistogram(bounds: SecondsHistogram.probeBounds)
    }

    private struct State {
        var serving = false
        var served: [String: [Outcome: Int]] = [:]
        var refused: [String: Int] = [:]
        var badRequests = 0
        var overLimit = 0
        var durations = SecondsHistogram(bounds: SecondsHistogram.probeBounds)
        /// Bumped by every change, for the textfile.
        var version = 0
    }

    private let state = Mutex(State())
    private let inFlight = Atomic<Int>(0)

    init() {}

    /// The route is served (the listener started): its families appear from now on.
    func startServing() {
        state.withLock { $0.serving = true }
    }

    /// Takes an in-flight slot when fewer than `limit` are taken, else counts the refusal (503).
    /// - Returns: whether the slot was taken; the caller releases it with ``release()`` when the probe ends.
    func admit(limit: Int) -> Bool {
        var current = inFlight.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = inFlight.weakCompareExchange(
                expected: current, desired: current + 1, successOrdering: .acquiring, failureOrdering: .relaxed)
            if exchanged { return true }
            current = original
        }
        overLimit()
        return false
    }

    /// Counts a request refused above the limit, or above its peer's share of it (503).
    func overLimit() {
        state.withLock {
            $0.overLimit += 1
            $0.version &+= 1
        }
    }

    /// Gives back a slot ``admit(limit:)`` took.
    func release() {
        inFlight.subtract(1, ordering: .releasing)
    }

    /// Counts a request refused before it reached the agent, or that the agent found invalid (400).
    func badRequest() {
        state.withLock {
            $0.badRequests += 1
            $0.version &+= 1
        }
    }

    /// Counts what the agent answered, and how long it took.
    func answered(_ answer: TargetProbeAnswer, module: String, seconds: Double) {
        state.withLock { state in
            switch answer {
            case .probed(let result, _):
                state.served[module, default: [:]][result.outcome == .success ? .success : .failure, default: 0] += 1
            case .refused:
                state.refused[module, default: 0] += 1
            case .invalid:
                state.badRequests += 1
            case .unavailable:
                break  // not the client's doing, and no probe ran: its duration is still observed
            }
            state.durations.observe(seconds)
            state.version &+= 1
        }
    }

    /// A number that changes whenever the counters do.
    var version: Int { state.withLock { $0.version } }

    /// The counters now; nil while the route is not served.
    func snapshot() -> Snapshot? {
        let running = inFlight.load(ordering: .relaxed)
        return state.withLock { state in
            guard state.serving else { return nil }
            var snapshot = Snapshot()
            for module in state.served.keys.sorted() {
                for outcome in Outcome.allCases {
                    if let count = state.served[module]?[outcome] { snapshot.served.append((module, outcome, count)) }
                }
            }
            snapshot.refused = state.refused.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            snapshot.badRequests = state.badRequests
            snapshot.overLimit = state.overLimit
            snapshot.inFlight = running
            snapshot.durations = state.durations
            return snapshot
        }
    }
}

extension MetricsExposition {
    /// The `/probe` route's families (issue 26's "status of /probe"): labelled families only once they have a sample.
    static func renderProbeRouteFamilies(_ route: ProbeRouteMetrics.Snapshot, into out: inout Output) {
        if !route.served.isEmpty {
            out.family("pinpath_probe_requests", .counter, "Probes /probe ran, by module and outcome.")
            for (module, outcome, count) in route.served {
                out.sample("pinpath_probe_requests_total", "module=\"\(escape(module))\",outcome=\"\(outcome.rawValue)\"", Double(count))
            }
        }
        if !route.refused.isEmpty {
            out.family(
                "pinpath_probe_refused_targets", .counter, "Targets /probe refused (403) by the module's targets or the default refusals.")
            for (module, count) in route.refused {
                out.sample("pinpath_probe_refused_targets_total", "module=\"\(escape(module))\"", Double(count))
            }
        }
        out.family(
            "pinpath_probe_bad_requests", .counter, "/probe requests answered 400: a malformed query, an unknown module, a bad target.")
        out.sample("pinpath_probe_bad_requests_total", "", Double(route.badRequests))
        out.family(
            "pinpath_probe_over_limit", .counter,
            "/probe requests answered 503 above metrics.probe_max_in_flight or a client's share of it.")
        out.sample("pinpath_probe_over_limit_total", "", Double(route.overLimit))
        out.family("pinpath_probe_in_flight", .gauge, "/probe probes running now.")
        out.sample("pinpath_probe_in_flight", "", Double(route.inFlight))
        out.family("pinpath_probe_request_duration_seconds", .histogram, "How long /probe requests that reached a module took.")
        out.histogram("pinpath_probe_request_duration_seconds", route.durations)
    }
}
