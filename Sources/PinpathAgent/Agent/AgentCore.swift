import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// The agent's mutable state and its scheduling loop, on one actor: the endpoints' trackers, the schedule,
/// the pin-report suppression, the probes in flight. Probes run as their own tasks and report back here.
actor AgentCore {
    private let writer: AsyncEventWriter
    private let monitor: ReachabilityMonitor
    private let probe: EndpointProbe
    nonisolated let isOnce: Bool
    private(set) var configuration: AgentConfiguration
    private var trackers: [String: EndpointTracker] = [:]
    private var order: [String] = []
    private var scheduler = ProbeScheduler(origin: ProbeScheduler.wallClockAlignedOrigin())
    private var reports = PinReportDeduplicator()
    private var inFlight: [String: Task<Void, Never>] = [:]
    /// Due probes waiting for room (see ``maximumProbesInFlight``), oldest first from `waitingHead`.
    private var waiting: [(name: String, due: ContinuousClock.Instant)] = []
    private var waitingHead = 0
    private var waitingNames = Set<String>()
    /// Full handshakes cost about 1.5 ms of CPU each here: 256 at once already keep two cores busy.
    static let maximumProbesInFlight = 256
    private var generation = 0
    private var stopping = false
    private var sleeper: CheckedContinuation<Void, Never>?
    /// Counts the loop's sleeps, so that a timer can tell whether the sleep it was set for is still on.
    private var sleepNumber = 0
    private var metricsDirty = false
    private(set) var counters = Counters()

    struct Counters: Sendable {
        var probes = 0
        var failures = 0
        var pinFailures = 0
        /// How late probes started against their schedule: the most recent samples, in microseconds.
        var lateness = LatenessSamples()
    }

    init(configuration: AgentConfiguration, writer: AsyncEventWriter, monitor: ReachabilityMonitor, session: Session, once: Bool) {
        self.configuration = configuration
        self.writer = writer
        self.monitor = monitor
        self.probe = EndpointProbe(session: session)
        self.isOnce = once
        let now = ContinuousClock.now
        for endpoint in configuration.endpoints {
            trackers[endpoint.name] = EndpointTracker(endpoint, generation: 0, thresholdsOfOne: once)
            order.append(endpoint.name)
            if !once { scheduler.add(endpoint.name, interval: endpoint.interval, now: now) }
        }
        // A first result for every endpoint soon after start rather than up to an interval later, spread at
        // about 200 a second (at least over one second, at most over the interval) so that a restart with
        // many endpoints is not a burst: 10,000 endpoints at 60 s are 167 probes a second anyway.
        let names = configuration.endpoints.map(\.name)
        if !once, let shortest = configuration.endpoints.map(\.interval).min() {
            let window = min(shortest, max(.seconds(1), .milliseconds(5 * names.count)))
            scheduler.probeSoon(names, now: now, window: window)
        }
    }

    // MARK: The loop

    /// Probes every endpoint on its schedule until ``stop()``.
    func run() async {
        while !stopping {
            let now = ContinuousClock.now
            while let due = scheduler.takeDue(now: now) { launch(due.endpoint, due: due.due) }
            if stopping { break }
            await sleep(until: scheduler.nextDue)
        }
    }

    /// Probes every endpoint once, concurrently, and waits for all of them (`pinpath run --once`).
    /// - Returns: whether every endpoint ended `up`.
    func runOnce() async -> Bool {
        let now = ContinuousClock.now
        for name in order { launch(name, due: now) }
        await waitForProbes(timeout: nil)
        return order.allSatisfy { trackers[$0]?.state.status == .up }
    }

    /// Starts a probe, or queues it while ``maximumProbesInFlight`` run: a burst (the first pass, the path
    /// coming back for thousands of endpoints) then waits its turn instead of piling up transfers whose
    /// timeouts run out in libcurl's queue. Lateness counts from `due` to the actual start.
    private func launch(_ name: String, due: ContinuousClock.Instant) {
        guard inFlight[name] == nil, trackers[name] != nil else { return }  // still running: skip this slot
        guard inFlight.count < Self.maximumProbesInFlight else {
            if waitingNames.insert(name).inserted { waiting.append((name, due)) }
            return
        }
        start(name, due: due)
    }

    private func start(_ name: String, due: ContinuousClock.Instant) {
        guard let tracker = trackers[name] else { return }
        if !isOnce { counters.lateness.record(due.duration(to: .now)) }
        let endpoint = tracker.endpoint, generation = tracker.generation, probe = self.probe
        inFlight[name] = Task {
            let result = await probe.probe(endpoint)
            self.handle(result, generation: generation)
        }
    }

    /// Starts queued probes while there is room.
    private func startWaiting() {
        while inFlight.count < Self.maximumProbesInFlight, waitingHead < waiting.count {
            let (name, due) = waiting[waitingHead]
            waitingHead += 1
            waitingNames.remove(name)
            if inFlight[name] == nil { start(name, due: due) }
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
    }

    /// Sleeps until `deadline` or ``wake()``, whichever comes first.
    ///
    /// Each sleep's timer wakes that sleep only (by its number): a timer that outlives its sleep (cancelled
    /// because something else woke the loop, or firing just as it was woken) must not end the next one. It
    /// once did, and every early wake (a reload, the path coming back) left the loop spinning for good, each
    /// cancelled timer waking the next sleep and being cancelled in turn.
    private func sleep(until deadline: ContinuousClock.Instant?) async {
        sleepNumber += 1
        let number = sleepNumber
        var timer: Task<Void, Never>?
        await withCheckedContinuation { continuation in
            sleeper = continuation
            if let deadline {
                timer = Task { [weak self] in
                    do {
                        try await Task.sleep(until: deadline, tolerance: .milliseconds(1))
                    } catch {
                        return  // cancelled: its sleep is already over
                    }
                    await self?.wake(sleepNumber: number)
                }
            }
        }
        timer?.cancel()
    }

    /// Ends the current sleep, if any: something changed that the loop must look at.
    private func wake() {
        sleeper?.resume()
        sleeper = nil
    }

    /// Ends sleep number `number` if it is still the current one.
    private func wake(sleepNumber number: Int) {
        guard number == sleepNumber else { return }
        wake()
    }

    // MARK: Results

    private func handle(_ result: ProbeResult, generation: Int) {
        inFlight[result.endpoint] = nil
        startWaiting()
        guard var tracker = trackers[result.endpoint], tracker.generation == generation else { return }
        defer { trackers[result.endpoint] = tracker }
        let endpoint = tracker.endpoint
        counters.probes += 1
        if result.outcome == .failure { counters.failures += 1 }
        tracker.lastProbe = EndpointTracker.LastProbe(result)
        metricsDirty = true

        if configuration.events.probes == .all || isOnce {
            emit(AgentEvents.probeCompleted, [("endpoint", .string(endpoint.name))] + AgentEvents.probe(result))
        }
        if let evaluation = result.pinFailure {
            tracker.pinFailures += 1
            counters.pinFailures += 1
            switch reports.decide(PinReportDeduplicator.Key(evaluation.report), now: .now) {
            case .emit(let suppressed):
                emit(AgentEvents.pinFailure, AgentEvents.pinFailure(endpoint, evaluation, suppressed: suppressed))
            case .suppress:
                break
            }
        }
        if let evaluation = result.evaluation, !evaluation.verifiedChain.isEmpty {
            checkExpiry(of: evaluation, tracker: &tracker)
        }
        let input: EndpointState.Input
        switch result.outcome {
        case .success: input = .probeSucceeded
        case .failure: input = .probeFailed
        case .unreachable:
            // The gate and the monitor's events see the same snapshot; a verdict that is already stale (the
            // path came back while the probe ran) says nothing about the endpoint.
            guard !EndpointTracker.isReachable(endpoint, on: monitor.currentPath) else { return }
            input = .pathUnreachable
        }
        if let transition = tracker.state.apply(input) {
            emit(EndpointState.Transition.eventName, AgentEvents.stateChanged(endpoint, transition, probe: result))
        }
    }

    private func checkExpiry(of evaluation: TrustEvaluation, tracker: inout EndpointTracker) {
        let chain = evaluation.verifiedChain.map {
            ExpiryCheck.Certificate(identity: $0.sha256Fingerprint, subject: $0.subject, notAfter: $0.notAfter)
        }
        let servedExpiry = evaluation.servedChain.map(\.notAfter).min()
        let chainExpiry = evaluation.verifiedChain.map(\.notAfter).min()
        for warning in tracker.expiry.check(chain: chain, now: Date()) {
            emit(AgentEvents.certificateExpiring, [
                ("endpoint", .string(tracker.endpoint.name)),
                ("host", .string(evaluation.host)),
                ("subject", .string(warning.certificate.subject)),
                ("depth", .int(warning.depth)),
                ("not_after", AgentEvents.rfc3339(warning.certificate.notAfter)),
                ("days_left", .int(warning.daysLeft)),
                ("earliest_served_expiry", AgentEvents.rfc3339(servedExpiry)),
                ("verified_chain_expiry", AgentEvents.rfc3339(chainExpiry)),
            ])
        }
    }

    // MARK: The path

    /// Re-reads the monitor's snapshot: endpoints whose path or target went away become `unreachable` and are
    /// not probed; those that came back are probed at once, spread over a second.
    func pathChanged() {
        guard !isOnce else { return }
        let path = monitor.currentPath
        var returning: [String] = []
        for name in order {
            guard var tracker = trackers[name] else { continue }
            let reachable = EndpointTracker.isReachable(tracker.endpoint, on: path)
            if !reachable && tracker.state.pathIsReachable {
                if let transition = tracker.state.apply(.pathUnreachable) {
                    emit(EndpointState.Transition.eventName, AgentEvents.stateChanged(tracker.endpoint, transition, probe: nil))
                }
                scheduler.suspend(name)
                metricsDirty = true
            } else if reachable && !tracker.state.pathIsReachable {
                _ = tracker.state.apply(.pathReachable)
                returning.append(name)
            }
            trackers[name] = tracker
        }
        if !returning.isEmpty {
            scheduler.probeSoon(returning, now: .now)
            wake()
        }
    }

    // MARK: Reload and stop

    /// Replaces the configuration: new endpoints are scheduled, removed ones forgotten, changed ones start
    /// afresh; unchanged ones keep their state. Returns what changed, for `config.reloaded`.
    func replace(with new: AgentConfiguration) -> (added: [String], removed: [String], changed: [String]) {
        generation += 1
        let now = ContinuousClock.now
        let names = Set(new.endpoints.map(\.name))
        let removed = order.filter { !names.contains($0) }
        var added: [String] = [], changed: [String] = []
        for name in removed {
            trackers[name] = nil
            scheduler.remove(name)
        }
        for endpoint in new.endpoints {
            if let old = trackers[endpoint.name] {
                // By value, over everything its probe depends on (policies a redirect may reach included).
                guard old.endpoint != endpoint else { continue }
                changed.append(endpoint.name)
            } else {
                added.append(endpoint.name)
            }
            trackers[endpoint.name] = EndpointTracker(endpoint, generation: generation)
            scheduler.add(endpoint.name, interval: endpoint.interval, now: now)
        }
        order = new.endpoints.map(\.name)
        configuration = new
        metricsDirty = true
        pathChanged()  // new endpoints may start out unreachable
        wake()
        return (added, removed, changed)
    }

    /// Stops scheduling; the loop returns.
    func stop() {
        stopping = true
        waiting.removeAll()  // not started: nothing to wait for
        waitingHead = 0
        waitingNames.removeAll()
        wake()
    }

    /// Waits for the probes in flight, at most `timeout`; then cancels the rest (their transfers stop).
    func waitForProbes(timeout: Duration?) async {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        // Probes leave `inFlight` as they report; a short poll keeps this simple and is only used at the end.
        while !inFlight.isEmpty {
            if let deadline, ContinuousClock.now >= deadline {
                for task in inFlight.values { task.cancel() }
                return
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: Metrics

    /// The metrics of every endpoint if something changed since the last call, else `nil`.
    func metricsIfChanged() -> [TextfileMetrics.Endpoint]? {
        guard metricsDirty else { return nil }
        metricsDirty = false
        return order.compactMap { trackers[$0]?.metrics }
    }

    /// The metrics could not be written: offer them again at the next call.
    func metricsNotWritten() { metricsDirty = true }

    private func emit(_ event: String, _ fields: [(String, JSONValue)]) {
        _ = writer.emit(event: event, fields: fields)
    }
}
