import FoundationEssentials
import PinpathHTTP
import PinpathReachability

/// Every endpoint's tracker, and what probe results, path changes and reloads do to them: the endpoint
/// states, the pin report suppression, the expiry warnings, the counters and the metrics. It writes
/// nothing: each change returns the events it causes, in order, for the agent to write.
///
/// A value with no locking: the agent's actor owns it.
struct EndpointRegistry {
    private var trackers: [String: EndpointTracker] = [:]
    /// The endpoints' names, in configuration order.
    private(set) var order: [String] = []
    private var reports = PinReportDeduplicator()
    /// Results recorded, failed ones, and pin failures among them.
    private(set) var probes = 0
    private(set) var failures = 0
    private(set) var pinFailures = 0
    /// Bumped by each reload: results of probes started before a reload changed their endpoint are dropped.
    private var generation = 0
    /// Endpoints whose metrics changed since ``takeMetricsChanges()`` last ran.
    private var metricsChanged: Set<String> = []
    /// A reload changed the set or order of endpoints since then.
    private var metricsOrderChanged = true

    /// - Parameter thresholdsOfOne: decide each state on one result (`run --once`).
    init(_ endpoints: [EndpointConfiguration], thresholdsOfOne: Bool) {
        for endpoint in endpoints {
            trackers[endpoint.name] = EndpointTracker(endpoint, generation: 0, thresholdsOfOne: thresholdsOfOne)
            order.append(endpoint.name)
        }
    }

    /// What a probe of `name` needs: its configuration and the generation its result must carry back.
    func probeTarget(_ name: String) -> (endpoint: EndpointConfiguration, generation: Int)? {
        trackers[name].map { ($0.endpoint, $0.generation) }
    }

    /// The endpoints being probed (not held by the path or the connectivity verdict), in configuration order.
    var probed: [String] { order.filter { trackers[$0]?.state.pathIsReachable ?? false } }

    /// The endpoints being probed that a connectivity verdict may hold (the plain ones:
    /// ``EndpointTracker/connectivityMayHold(_:)``), in configuration order.
    var probedHoldable: [String] {
        probed.filter { name in trackers[name].map { EndpointTracker.connectivityMayHold($0.endpoint) } ?? false }
    }

    /// Whether every endpoint is `up`.
    var allUp: Bool { order.allSatisfy { trackers[$0]?.state.status == .up } }

    /// `3 endpoints: 2 up, 1 down, 0 unreachable, 0 unknown`: systemd's STATUS= line.
    var summary: String {
        var counts: [EndpointState.Status: Int] = [:]
        for name in order { counts[trackers[name]?.state.status ?? .unknown, default: 0] += 1 }
        let parts = EndpointState.Status.allCases.filter { $0 != .unknown } + [.unknown]
        return "\(order.count) endpoint\(order.count == 1 ? "" : "s"): "
            + parts.map { "\(counts[$0, default: 0]) \($0.rawValue)" }.joined(separator: ", ")
    }

    // MARK: Results

    /// Applies a probe's result to its endpoint.
    /// - Parameters:
    ///   - generation: the generation the probe started with; a result from before a reload that changed
    ///     the endpoint is dropped.
    ///   - reportEveryProbe: write `probe.completed` for it.
    ///   - includeCertificates: `pin.failure` carries the chains' PEMs too (`events.include_certificates`).
    ///   - connectivity: the connectivity check's last state (`nil`: none configured, or no verdict yet), which
    ///     the events carry as context; it changes nothing a result decides.
    ///   - currentPath: the monitor's snapshot now, asked only for an `unreachable` result.
    /// - Returns: the events the result causes, in order, and the pin failure reports to send to the
    ///   endpoint's collectors (those of the `pin.failure` written, none for a suppressed one).
    mutating func record(
        _ result: ProbeResult, generation: Int, reportEveryProbe: Bool, includeCertificates: Bool,
        connectivity: ConnectivityState?, currentPath: () -> NetworkPath
    ) -> (events: [AgentEvent], reports: [PinReportJob]) {
        guard var tracker = trackers[result.endpoint], tracker.generation == generation else { return ([], []) }
        defer { trackers[result.endpoint] = tracker }
        let endpoint = tracker.endpoint
        var events: [AgentEvent] = []
        var jobs: [PinReportJob] = []
        probes += 1
        if result.outcome == .failure { failures += 1 }
        tracker.lastProbe = EndpointTracker.LastProbe(result)
        metricsChanged.insert(result.endpoint)

        if reportEveryProbe { events.append(AgentEvents.probeCompleted(result, connectivity: connectivity)) }
        if let evaluation = result.pinFailure {
            if evaluation.allowsConnection {
                tracker.reportOnlyPinFailures += 1
            } else {
                tracker.enforcedPinFailures += 1
            }
            pinFailures += 1
            switch reports.decide(PinReportDeduplicator.Key(evaluation.report), now: .now) {
            case .emit(let suppressed):
                events.append(
                    AgentEvents.pinFailure(
                        endpoint, evaluation, suppressed: suppressed, connectivity: connectivity, includeCertificates: includeCertificates))
                jobs = PinReportJob.jobs(evaluation.report, endpoint: endpoint.name, collectors: endpoint.reportCollectors)
            case .suppress:
                break
            }
        }
        if let evaluation = result.evaluation, let check = evaluation.ocspCheck, check.status != tracker.reportedOCSPStatus {
            events.append(AgentEvents.revocationChecked(endpoint, evaluation, check, previous: tracker.reportedOCSPStatus))
            tracker.reportedOCSPStatus = check.status
        }
        if let evaluation = result.evaluation, !evaluation.servedChain.isEmpty {
            let now = Date()
            for expired in tracker.expiry.expired(evaluation, now: now) {
                events.append(AgentEvents.certificateExpired(endpoint, evaluation, expired))
            }
            if !evaluation.verifiedChain.isEmpty {
                for warning in tracker.expiry.check(evaluation, now: now) {
                    events.append(AgentEvents.certificateExpiring(endpoint, evaluation, warning))
                }
            }
        }
        let input: EndpointState.Input
        switch result.outcome {
        case .success: input = .probeSucceeded
        case .failure: input = .probeFailed
        case .unreachable:
            // The gate and the monitor's events see the same snapshot; a verdict that is already stale (the
            // path came back while the probe ran) says nothing about the endpoint.
            guard !EndpointTracker.isReachable(endpoint, on: currentPath()) else { return (events, jobs) }
            input = .pathUnreachable
        }
        if let transition = tracker.state.apply(input) {
            events.append(AgentEvents.stateChanged(endpoint, transition, probe: result, connectivity: connectivity))
        }
        return (events, jobs)
    }

    // MARK: The path

    /// Applies the monitor's snapshot and the connectivity check's last verdict: endpoints whose path or
    /// target went away, or plain ones outside the local network while connectivity is `limited`, `portal` or
    /// `intercepted`, become `unreachable` (``EndpointTracker/blockingCause(_:on:connectivity:)``); those that
    /// came back may be probed again. Endpoints whose probe involves TLS are held by the path alone.
    /// - Returns: the events, the endpoints that became unreachable (not to be probed) and those that came
    ///   back (to be probed soon), in configuration order.
    mutating func pathChanged(_ path: NetworkPath, connectivity: ConnectivityState? = nil) -> (
        events: [AgentEvent], unreachable: [String], returning: [String]
    ) {
        var events: [AgentEvent] = []
        var unreachable: [String] = []
        var returning: [String] = []
        for name in order {
            guard var tracker = trackers[name] else { continue }
            let blocked = EndpointTracker.blockingCause(tracker.endpoint, on: path, connectivity: connectivity)
            let reachable = blocked == nil
            if let blocked, tracker.state.pathIsReachable {
                if let transition = tracker.state.apply(blocked) {
                    events.append(AgentEvents.stateChanged(tracker.endpoint, transition, probe: nil, connectivity: connectivity))
                }
                unreachable.append(name)
                metricsChanged.insert(name)
            } else if reachable && !tracker.state.pathIsReachable {
                _ = tracker.state.apply(.pathReachable)
                metricsChanged.insert(name)
                returning.append(name)
            }
            trackers[name] = tracker
        }
        return (events, unreachable, returning)
    }

    // MARK: Reload

    /// Applies a reload: removed endpoints are forgotten, new and changed ones start afresh (their probes in
    /// flight are dropped when they report), unchanged ones keep their state.
    /// - Returns: the endpoints that start afresh, to be scheduled.
    mutating func apply(_ change: ConfigurationChange, endpoints: [EndpointConfiguration]) -> [EndpointConfiguration] {
        generation += 1
        for name in change.removed { trackers[name] = nil }
        let afresh = Set(change.added + change.changed)
        let restarted = endpoints.filter { afresh.contains($0.name) }
        for endpoint in restarted {
            trackers[endpoint.name] = EndpointTracker(endpoint, generation: generation)
        }
        order = endpoints.map(\.name)
        metricsOrderChanged = true
        return restarted
    }

    // MARK: Metrics

    /// What changed in the metrics since the last call: after a reload (and at the first call) the order and
    /// every endpoint's metrics; otherwise only the endpoints that changed, in no particular order.
    mutating func takeMetricsChanges() -> (order: [String]?, endpoints: [MetricsSnapshot.Endpoint]) {
        defer {
            metricsChanged.removeAll(keepingCapacity: true)
            metricsOrderChanged = false
        }
        if metricsOrderChanged { return (order, order.compactMap { trackers[$0]?.metrics }) }
        return (nil, metricsChanged.compactMap { trackers[$0]?.metrics })
    }
}
