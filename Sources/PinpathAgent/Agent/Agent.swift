import FoundationEssentials
import Glibc
import PinpathHTTP
import PinpathReachability
import PinpathSupport
import Synchronization

/// The monitoring agent: probes the configured endpoints through the gated request core and writes JSON-lines
/// events on reachability changes, endpoint state changes, pin failures and certificate expiry.
///
/// ```swift
/// let agent = try await Agent.start(configurationPath: "/etc/pinpath/pinpath.yaml")
/// // wire SIGHUP to agent.reload(), SIGUSR1 to agent.reopenEvents(), SIGTERM to agent.stop(reason:)
/// await agent.run()
/// ```
public final class Agent: Sendable {
    /// Why the agent could not start.
    public enum StartError: Error, Sendable {
        /// The configuration is invalid: every problem found.
        case configuration(ConfigurationError)
        /// The events output or the metrics textfile cannot be used (missing directory, a symbolic link).
        case output(String)
        /// Netlink or libcurl cannot be used.
        case unavailable(String)
    }

    private let core: AgentCore
    private let writer: EventWriterThread
    private let monitor: ReachabilityMonitor
    private let session: Session
    private let reports: PinReportDelivery
    private let notifier: SystemdNotifier
    private let configurationPath: String
    private let environment: [String: String]
    private let started = ContinuousClock.now
    private let stopReason = Mutex<String?>(nil)
    private let reloads = Mutex<Task<Void, Never>?>(nil)
    private let metrics: MetricsStore
    /// What `/api/v1/status` shows.
    private let status: StatusStore
    private let metricsServer: MetricsServer?
    /// The connectivity check, when `connectivity:` is configured (not with `run --once`).
    private let connectivity: ConnectivityWatcher?
    /// The textfile's state: the metrics version last written (nil: write at the next turn), and whether the
    /// last write failed, so that a failure streak is reported once, not every 5 s.
    private let textfile = Mutex<(writtenVersion: Int?, failing: Bool)>((nil, false))

    private init(
        core: AgentCore, writer: EventWriterThread, monitor: ReachabilityMonitor, session: Session, reports: PinReportDelivery,
        notifier: SystemdNotifier, metrics: MetricsStore, status: StatusStore, metricsServer: MetricsServer?,
        connectivity: ConnectivityWatcher?, path: String, environment: [String: String]
    ) {
        self.connectivity = connectivity
        self.status = status
        self.reports = reports
        self.core = core
        self.metrics = metrics
        self.metricsServer = metricsServer
        self.writer = writer
        self.monitor = monitor
        self.session = session
        self.notifier = notifier
        self.configurationPath = path
        self.environment = environment
    }

    /// Loads the configuration, opens the events output, starts the reachability monitor (on the endpoints'
    /// hosts and the configured targets) and the request core, and writes `agent.started`.
    /// - Parameter once: probe every endpoint once with thresholds of one (`run --once`).
    public static func start(
        configurationPath: String, once: Bool = false, environment: [String: String] = ProcessInfo.processInfo.environment,
        notifier: SystemdNotifier = SystemdNotifier()
    ) async throws(StartError) -> Agent {
        let configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.load(path: configurationPath, environment: environment)
        } catch {
            throw .configuration(error)
        }
        let sink = try openSink(configuration.events)
        if let textfile = configuration.metricsTextfile {
            do {
                try TextfileMetrics(path: textfile).checkNotALink()
            } catch {
                throw .output("\(error)")
            }
        }
        DescriptorSink.ignoreBrokenPipeSignal()
        let status = StatusStore(configurationPath: configurationPath)
        status.configure(configuration)
        // The status document sees the events as they are written: the same redacted values.
        let writer = EventWriterThread(
            sink: sink, format: lineFormat(configuration.events, environment: environment), observer: { status.observe($0) })
        let metrics = MetricsStore { writer.statistics }
        // Bound first: an address in use is an output that cannot be used, found before anything else starts.
        let agentBox = AgentReference()
        var metricsServer: MetricsServer?
        if let address = configuration.metricsListen, !once {
            do {
                // `/probe` reaches the agent made below; until then (and after a failed start) it has no agent.
                metricsServer = try await MetricsServer.start(
                    address, store: metrics,
                    probe: { await agentBox.agent?.probe($0) ?? .unavailable("the agent is starting; retry in a second") },
                    probeMaxInFlight: configuration.metricsProbeMaxInFlight, access: configuration.metricsAccess, status: status)
            } catch {
                _ = writer.close(timeout: .seconds(1))
                throw .output(error.description)
            }
        }
        let monitor: ReachabilityMonitor
        let session: Session
        do {
            monitor = try await ReachabilityMonitor.start(targets: configuration.watchedTargets)
        } catch {
            await metricsServer?.close()
            _ = writer.close(timeout: .seconds(1))
            throw .unavailable("netlink is unavailable: \(error)")
        }
        do {
            session = try Session(monitor: monitor)
        } catch {
            monitor.stop()
            await metricsServer?.close()
            _ = writer.close(timeout: .seconds(1))
            throw .unavailable(error.message)
        }
        metrics.update(path: monitor.currentPath)
        status.update(path: monitor.currentPath)
        // WATCHDOG=1 (when systemd watches) and STATUS= with the endpoints' states, from the scheduling loop.
        let heartbeat = notifier.heartbeatInterval.map { interval in
            AgentCore.Heartbeat(interval: interval) { summary in
                try? notifier.watchdog()
                try? notifier.status(summary)
            }
        }
        // Pin failure reports go to their collectors through the same session: the collector's host is held to
        // its own policies and to the reachability gate, as any request.
        let reports = PinReportDelivery(session: session) { writer.emit($0) }
        let core = AgentCore(
            configuration: configuration, writer: writer, monitor: monitor, session: session, reports: reports, once: once,
            metrics: metrics, status: status, heartbeat: once ? nil : heartbeat)
        // The check goes through the same session, so it is gated by the path like every probe.
        let connectivity = configuration.connectivity.flatMap { settings in
            once
                ? nil
                : ConnectivityWatcher(session: session, configuration: settings) {
                    await core.connectivityChecked($0, url: settings.check.url)
                }
        }
        let agent = Agent(
            core: core, writer: writer, monitor: monitor, session: session, reports: reports, notifier: notifier,
            metrics: metrics, status: status, metricsServer: metricsServer, connectivity: connectivity, path: configurationPath,
            environment: environment)
        agentBox.set(agent)
        writer.emit(
            AgentEvents.started(
                configurationPath: configurationPath, configuration: configuration, once: once, path: monitor.currentPath))
        // Reachability events are written on the monitor's thread, in the kernel's order; the endpoints'
        // consequences follow on the agent's actor.
        monitor.onChange { event in
            if case .path(let change) = event, change.reason == .initial { return }  // agent.started has it
            if case .target(let change) = event, change.reason == .initial { return }
            writer.emit(AgentEvents.reachability(event))
            metrics.update(path: monitor.currentPath)
            status.update(path: monitor.currentPath)
            Task { await core.pathChanged() }
            if case .path = event, let connectivity { Task { await connectivity.pathChanged() } }
        }
        return agent
    }

    /// Tells systemd the agent is ready (READY=1), probes until ``stop(reason:)``, then lets probes in flight
    /// finish (at most 2 s), writes `agent.stopping`, flushes the events, stops the monitor and the request
    /// core (their threads joined, so the process may exit) and returns. With `once`, returns
    /// after one probe of each endpoint. Install signal handlers before calling it: READY=1 invites reloads.
    /// - Returns: for `once`, whether every endpoint is up; otherwise `true`.
    @discardableResult
    public func run() async -> Bool {
        try? notifier.ready()
        let metrics = Task { await self.writeMetricsPeriodically() }
        let connectivityChecks = connectivity.map { watcher in Task { await watcher.run() } }
        let allUp: Bool
        if core.isOnce {
            allUp = await core.runOnce()
            stopReason.withLock { $0 = $0 ?? "once" }
        } else {
            await core.run()
            allUp = true
        }
        try? notifier.stopping()
        await connectivity?.stop()
        connectivityChecks?.cancel()  // a check in flight: its transfer stops
        await connectivityChecks?.value
        await core.waitForProbes(timeout: .seconds(2))
        // Reports still queued or retrying get a short time to arrive; the rest are reported as not delivered.
        await reports.shutdown(grace: .seconds(2))
        metrics.cancel()
        await writeMetrics()
        await metricsServer?.close()
        let counters = await core.counters
        writer.emit(
            AgentEvents.stopping(
                reason: stopReason.withLock { $0 } ?? "stopped", uptime: ContinuousClock.now - started, counters: counters,
                eventsDropped: writer.statistics.dropped))
        _ = writer.close(timeout: .seconds(2))
        monitor.stop()
        // Probes still in flight after the grace period were cancelled, but their transfers may still be inside
        // OpenSSL on the libcurl thread; the process must not exit (and run OpenSSL's cleanup) under them.
        session.shutdown()
        return allUp
    }

    /// Ends ``run()``: scheduling stops at once. Safe from any thread; the first reason is kept.
    public func stop(reason: String) {
        stopReason.withLock { $0 = $0 ?? reason }
        Task { await core.stop() }
    }

    /// Reloads the configuration file (SIGHUP). An invalid file is rejected with `config.rejected` and the
    /// running configuration stays. Reloads run one at a time, in order.
    public func reload() {
        reloads.withLock { previous in
            let before = previous
            previous = Task {
                await before?.value
                await self.performReload()
            }
        }
    }

    private func performReload() async {
        try? notifier.reloading()
        defer { try? notifier.ready() }
        let configuration: AgentConfiguration
        do {
            configuration = try AgentConfiguration.load(path: configurationPath, environment: environment)
        } catch {
            status.reloaded(errors: error.problems.map(\.description))
            writer.emit(AgentEvents.rejected(configurationPath: configurationPath, error))
            return
        }
        // Reloads run one at a time, so the running configuration cannot change before `replace`.
        let change = ConfigurationChange(from: await core.configuration, to: configuration)
        for target in change.removedTargets { monitor.removeTarget(target) }
        for target in change.addedTargets { _ = try? await monitor.addTarget(target) }
        await core.replace(with: configuration, change: change)
        // The tls:// checks' shared contexts are built again under the new configuration's client certificates.
        session.reloadCheckContexts()
        // Credentials and TLS files apply to the running listener at once when it stays where it is; a listen address
        // changed or removed waits for a restart with its access, and the listener keeps the access it had.
        var reported = configuration
        if let metricsServer, !metricsServer.replaceAccess(with: configuration.metricsAccess, listen: configuration.metricsListen) {
            reported.warnings.append(
                ConfigurationProblem(
                    file: configurationPath, line: nil, column: nil, keyPath: "metrics.listen", code: .listenerAccessKept,
                    message:
                        "the listener stays on \(metricsServer.boundAddress) until a restart and keeps the access it had (metrics.tls, metrics.basic_auth, metrics.probe_unauthenticated); the reload's other changes apply"
                ))
        }
        status.reloaded(errors: nil)
        writer.emit(AgentEvents.reloaded(configurationPath: configurationPath, configuration: reported, change: change))
    }

    /// Probes one target a scraper names with one of the configuration's modules (`/probe?target=…&module=…`),
    /// now, through the same session, reachability gate, policy and verifier as an endpoint. The target is
    /// admitted first (the module's `targets:`, or the default refusals: ``TargetAdmission``), and nothing is
    /// connected to when it is not. A pin failure is written, counted and reported as an endpoint's; no
    /// endpoint's state changes. Modules follow reloads. Safe from any task.
    package func probe(_ request: TargetProbeRequest) async -> TargetProbeAnswer {
        let configuration = await core.configuration
        let path = monitor.currentPath
        let runner = TargetProbe(
            modules: configuration.modules, probe: EndpointProbe(session: session), listener: metricsServer?.boundAddress,
            localAddresses: path.interfaces.flatMap { $0.addresses.map(\.address) })
        let outcome = await runner.run(request)
        if case .probed(let result, _) = outcome.answer, let endpoint = outcome.endpoint {
            await core.targetProbed(result, endpoint, module: request.module)
        }
        return outcome.answer
    }

    /// Reopens a file output by name (SIGUSR1, after logrotate moved it).
    public func reopenEvents() { writer.reopen() }

    // MARK: Helpers

    /// Standard output gets journald's priority prefix when it is the journal; a file gets the host name.
    private static func lineFormat(_ events: EventsConfiguration, environment: [String: String]) -> EventLineFormat {
        switch events.output {
        case .stdout: .standardOutput(environment: environment)
        case .file: .file()
        }
    }

    private static func openSink(_ events: EventsConfiguration) throws(StartError) -> any EventSink {
        switch events.output {
        case .stdout:
            return DescriptorSink()
        case .file(let path):
            do {
                return try FileSink(path: path, maxBytes: events.maxSize, keptFiles: events.keep)
            } catch {
                throw .output("cannot open the events file: \(error)")
            }
        }
    }

    private func writeMetricsPeriodically() async {
        while !Task.isCancelled {
            await writeMetrics()
            try? await Task.sleep(for: .seconds(5))
        }
    }

    /// Rewrites the textfile when the metrics changed since the last write, or the last write failed. The first
    /// failure of a streak is reported (`metrics.write_failed`, with errno's name); every failure is counted
    /// (`pinpath_metrics_write_failures_total`).
    private func writeMetrics() async {
        guard let path = await core.configuration.metricsTextfile else { return }
        let version = metrics.version
        guard textfile.withLock({ $0.writtenVersion != version }) else { return }
        let (snapshot, snapshotVersion) = metrics.snapshot()
        do {
            try TextfileMetrics(path: path).write(MetricsExposition.render(snapshot))
            textfile.withLock { $0 = (snapshotVersion, false) }
        } catch {
            metrics.textfileWriteFailed()
            let isNewStreak = textfile.withLock { state in
                defer { state = (nil, true) }
                return !state.failing
            }
            if isNewStreak {
                writer.emit(
                    AgentEvents.metricsWriteFailed(
                        file: path, error: error.description, errnoName: OutputError(errno: error.errno).errnoName))
            }
        }
    }
}

/// The agent as the metrics listener reaches it for `/probe`: the listener starts before the agent exists, and
/// holds it weakly (the agent owns the listener).
private final class AgentReference: Sendable {
    private struct Weak: Sendable {
        weak var agent: Agent?
    }
    private let reference = Mutex(Weak())

    var agent: Agent? { reference.withLock { $0.agent } }

    func set(_ agent: Agent) {
        reference.withLock { $0.agent = agent }
    }
}
