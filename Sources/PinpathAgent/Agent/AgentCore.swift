import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSupport

/// The agent's scheduling loop, on one actor: it takes due probes from the schedule, starts them through the
/// admission (``ProbeAdmission``), hands their results and the path's changes to the endpoints
/// (``EndpointRegistry``) and writes the events those return. Probes run as their own tasks and report back
/// here.
actor AgentCore {
    private let writer: EventWriterThread
    private let monitor: ReachabilityMonitor
    private let probe: EndpointProbe
    private let reports: PinReportDelivery
    private let metrics: MetricsStore
    private let status: StatusStore
    nonisolated let isOnce: Bool
    private(set) var configuration: AgentConfiguration
    private var endpoints: EndpointRegistry
    private var scheduler = ProbeScheduler(origin: ProbeScheduler.wallClockAlignedOrigin())
    private var admission = ProbeAdmission()
    /// Target probes' pin failures (`/probe`), de-duplicated apart from the endpoints': a scraper's probes of a
    /// target never suppress an endpoint's `pin.failure`, nor the reverse.
    private var targetReports = PinReportDeduplicator()
    private var targetPinFailures = 0
    private var stopping = false
    /// Set when the stop's grace period is over and the probes still running are cancelled: their results (a
    /// cancellation) say nothing about their endpoints, and would come after `agent.stopping`.
    private var discardingResults = false
    private let heartbeat: Heartbeat?
    private let loopSleep = WakeableSleep()
    /// The connectivity check's last state; `nil` before the first verdict and when the check is off.
    private var connectivity: ConnectivityState?

    /// Called from the loop at least every `interval` with the endpoints' summary: systemd's watchdog and status.
    struct Heartbeat {
        let interval: Duration
        let beat: @Sendable (_ summary: String) -> Void
    }

    /// What `agent.stopping` reports.
    struct Counters: Sendable {
        var probes = 0
        var failures = 0
        var pinFailures = 0
        /// How late probes started against their schedule: the most recent samples, in microseconds.
        var lateness = LatenessSamples()
    }

    var counters: Counters {
        Counters(
            probes: endpoints.probes, failures: endpoints.failures, pinFailures: endpoints.pinFailures + targetPinFailures,
            lateness: admission.lateness)
    }

    init(
        configuration: AgentConfiguration, writer: EventWriterThread, monitor: ReachabilityMonitor, session: Session,
        reports: PinReportDelivery, once: Bool, metrics: MetricsStore, status: StatusStore, heartbeat: Heartbeat? = nil
    ) {
        self.reports = reports
        self.metrics = metrics
        self.status = status
        self.heartbeat = heartbeat
        self.configuration = configuration
        self.writer = writer
        self.monitor = monitor
        self.probe = EndpointProbe(session: session)
        self.isOnce = once
        endpoints = EndpointRegistry(configuration.endpoints, thresholdsOfOne: once)
        let changes = endpoints.takeMetricsChanges()
        metrics.update(order: changes.order, endpoints: changes.endpoints, probes: 0)
        guard !once else { return }
        let now = ContinuousClock.now
        for endpoint in configuration.endpoints {
            scheduler.add(endpoint.name, interval: endpoint.interval, now: now)
        }
        // With a connectivity check, the plain endpoints' first burst waits for its first verdict
        // (``connectivityChecked``): probed into a captive portal they would only meet the portal, and follow its
        // redirect. The TLS endpoints start at once: no verdict holds them, and an attacker who stalls the check
        // for its whole timeout must not delay the probes that would show the interception.
        let first = configuration.endpoints.filter { configuration.connectivity == nil || !EndpointTracker.connectivityMayHold($0) }
        if let window = Self.firstProbeWindow(configuration) {
            scheduler.probeSoon(first.map(\.name), now: now, window: window)
        }
    }

    /// A first result for every endpoint soon after start rather than up to an interval later, spread at
    /// about 200 a second (at least over one second, at most over the interval) so that a restart with
    /// many endpoints is not a burst: 10,000 endpoints at 60 s are 167 probes a second anyway.
    private static func firstProbeWindow(_ configuration: AgentConfiguration) -> Duration? {
        guard let shortest = configuration.endpoints.map(\.interval).min() else { return nil }
        return min(shortest, max(.seconds(1), .milliseconds(5 * configuration.endpoints.count)))
    }

    // MARK: The loop

    /// Probes every endpoint on its schedule until ``stop()``. The heartbeat comes from this loop, so that a
    /// loop that stops turning stops it too, and systemd's watchdog restarts the agent.
    func run() async {
        var nextBeat = ContinuousClock.now
        while !stopping {
            let now = ContinuousClock.now
            while let due = scheduler.takeDue(now: now) { launch(due.endpoint, due: due.due) }
            if stopping { break }
            var wakeUp = scheduler.nextDue
            if let heartbeat {
                if now >= nextBeat {
                    heartbeat.beat(endpoints.summary)
                    nextBeat = now + heartbeat.interval
                }
                wakeUp = min(wakeUp ?? nextBeat, nextBeat)
            }
            await loopSleep.sleep(until: wakeUp, tolerance: .milliseconds(1))
        }
    }

    /// Probes every endpoint once, concurrently, and waits for all of them (`pinpath run --once`).
    /// - Returns: whether every endpoint ended `up`.
    func runOnce() async -> Bool {
        let now = ContinuousClock.now
        for name in endpoints.order { launch(name, due: now) }
        await waitForProbes(timeout: nil)
        return endpoints.allUp
    }

    /// Starts a probe, or leaves it queued in the admission until there is room. Lateness counts from `due`
    /// to the actual start.
    private func launch(_ name: String, due: ContinuousClock.Instant) {
        guard !admission.isRunning(name), let (endpoint, _) = endpoints.probeTarget(name) else { return }  // still running: skip this slot
        if admission.admit(name, due: due, included: endpoint.isFromIncludedFile) { start(name, due: due) }
    }

    private func start(_ name: String, due: ContinuousClock.Instant) {
        guard let (endpoint, generation) = endpoints.probeTarget(name) else { return }
        let probe = self.probe
        let task = Task {
            let result = await probe.probe(endpoint)
            self.handle(result, generation: generation)
        }
        admission.started(name, task: task, due: isOnce ? nil : due, included: endpoint.isFromIncludedFile)
        if !isOnce { metrics.observeLateness(due.duration(to: .now)) }
    }

    /// Starts queued probes while there is room.
    private func startWaiting() {
        while let (name, due, _) = admission.nextWaiting() { start(name, due: due) }
    }

    /// Ends the loop's sleep: something changed that the loop must look at.
    private func wake() { loopSleep.wake() }

    // MARK: Results and the path

    private func handle(_ result: ProbeResult, generation: Int) {
        admission.finished(result.endpoint)
        guard !discardingResults else { return }
        startWaiting()
        // A result from before a reload that changed its endpoint says nothing the status may show.
        if endpoints.probeTarget(result.endpoint)?.generation == generation { status.probed(result) }
        let monitor = self.monitor
        let (events, jobs) = endpoints.record(
            result, generation: generation, reportEveryProbe: configuration.events.probes == .all || isOnce,
            includeCertificates: configuration.events.includeCertificates,
            connectivity: connectivity, currentPath: { monitor.currentPath })
        write(events)
        reports.submit(jobs)  // queued only: the collectors are sent to by the delivery's own tasks
        publishMetrics()
    }

    /// A target probe's security signals: its pin failure is written as `pin.failure` with the module and the
    /// target, counted, and reported to its policies' collectors, as an endpoint's is; nothing else of it touches
    /// the endpoints (no state, no `endpoint.*` event).
    func targetProbed(_ result: ProbeResult, _ endpoint: EndpointConfiguration, module: String) {
        guard let evaluation = result.pinFailure else { return }
        targetPinFailures += 1
        metrics.targetPinFailed(module: module, enforced: !evaluation.allowsConnection)
        switch targetReports.decide(PinReportDeduplicator.Key(evaluation.report), now: .now) {
        case .emit(let suppressed):
            write([
                AgentEvents.pinFailure(
                    endpoint, evaluation, suppressed: suppressed, connectivity: connectivity,
                    includeCertificates: configuration.events.includeCertificates, probe: (module, endpoint.url))
            ])
            // Their own share of each collector's queue: a scraper cannot crowd out the endpoints' reports.
            reports.submit(
                PinReportJob.jobs(evaluation.report, endpoint: endpoint.name, collectors: endpoint.reportCollectors, origin: .targetProbe))
        case .suppress:
            break
        }
    }

    /// Re-reads the monitor's snapshot: endpoints whose path or target went away become `unreachable` and are
    /// not probed; those that came back are probed at once, spread over a second.
    func pathChanged() {
        guard !isOnce else { return }
        let (events, unreachable, returning) = endpoints.pathChanged(monitor.currentPath, connectivity: connectivity)
        write(events)
        publishMetrics()
        for name in unreachable { scheduler.suspend(name) }
        if !returning.isEmpty {
            scheduler.probeSoon(returning, now: .now)
            wake()
        }
    }

    /// Takes a connectivity verdict: `connectivity.changed` when the state differs from the last (the first
    /// verdict too), the metric, and the plain endpoints outside the local network held or released.
    /// - Parameter url: the check's URL (the running one: a reload that changes it takes effect at restart).
    func connectivityChecked(_ verdict: ConnectivityVerdict, url: URL) {
        metrics.update(connectivity: verdict)
        let previous = connectivity
        guard previous != verdict.state else { return }
        connectivity = verdict.state
        write([AgentEvents.connectivityChanged(verdict, previous: previous, url: url)])
        pathChanged()
        if previous == nil, let window = Self.firstProbeWindow(configuration) {
            scheduler.probeSoon(endpoints.probedHoldable, now: .now, window: window)  // the plain ones' start burst, held until now
            wake()
        }
    }

    // MARK: Reload and stop

    /// Replaces the configuration with `new`, `change` being the difference from the running one: new
    /// endpoints are scheduled, removed ones forgotten, changed ones start afresh; unchanged ones keep their
    /// state.
    func replace(with new: AgentConfiguration, change: ConfigurationChange) {
        let now = ContinuousClock.now
        for name in change.removed { scheduler.remove(name) }
        // Their results would be dropped as stale anyway; left running, an old probe held its name (and its place
        // among the probes in flight) for its whole old timeout, which an included file chooses.
        for name in change.removed + change.changed { admission.cancel(name) }
        for endpoint in endpoints.apply(change, endpoints: new.endpoints) {
            scheduler.add(endpoint.name, interval: endpoint.interval, now: now)
        }
        configuration = new
        status.configure(new, change: change)  // before the state changes below, which the status sees as events
        pathChanged()  // new endpoints may start out unreachable
        wake()
    }

    /// Stops scheduling; the loop returns.
    func stop() {
        stopping = true
        admission.dropWaiting()
        wake()
    }

    /// Waits for the probes in flight, at most `timeout`; then cancels the rest (their transfers stop).
    func waitForProbes(timeout: Duration?) async {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        // Probes leave the admission as they report; a short poll keeps this simple and is only used at the end.
        while !admission.isIdle {
            if let deadline, ContinuousClock.now >= deadline {
                discardingResults = true
                admission.cancelRunning()
                return
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: Metrics

    /// Hands the endpoints whose metrics changed to the store that `/metrics` and the textfile read.
    private func publishMetrics() {
        let changes = endpoints.takeMetricsChanges()
        metrics.update(order: changes.order, endpoints: changes.endpoints, probes: endpoints.probes)
    }

    private func write(_ events: [AgentEvent]) {
        for event in events { _ = writer.emit(event) }
    }
}
