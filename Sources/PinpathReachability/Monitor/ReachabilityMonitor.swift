import Glibc
import PinpathSupport

/// Watches the kernel's links, addresses, routes and rules over netlink and says, without polling, whether
/// this machine and each watched target can be reached, and through which interface.
///
/// The Linux counterpart of `NWPathMonitor` and `AFNetworkReachabilityManager`:
/// ```swift
/// let monitor = try await ReachabilityMonitor.start(targets: [try ReachabilityTarget(parsing: "example.com")])
/// print(monitor.currentPath.status)          // complete as soon as start returns
/// for await event in monitor.changes() { … }  // the current state first, then each visible change
/// ```
/// Netlink is read on a thread of the monitor's own; everything here is safe to call from any thread or task.
public final class ReachabilityMonitor: Sendable {
    /// How to monitor.
    public struct Configuration: Sendable {
        /// A network namespace to monitor instead of the process's own: a name under /run/netns (as
        /// `ip netns` makes) or a path such as /proc/PID/ns/net. Entering one needs CAP_SYS_ADMIN.
        public var networkNamespace: String?
        /// The netlink socket's receive buffer. Big enough to ride out bursts; an overrun still costs only
        /// a resync. SO_RCVBUFFORCE is used when permitted, SO_RCVBUF (capped by rmem_max) otherwise.
        public var receiveBufferSize: Int
        /// How long a host name may take to resolve before the target is `dns_failed`.
        public var resolutionTimeout: Duration

        public init(
            networkNamespace: String? = nil, receiveBufferSize: Int = 8 << 20, resolutionTimeout: Duration = .seconds(5)
        ) {
            self.networkNamespace = networkNamespace
            self.receiveBufferSize = receiveBufferSize
            self.resolutionTimeout = resolutionTimeout
        }
    }

    /// Counters for operators and tests.
    public struct Statistics: Sendable, Equatable {
        /// Netlink messages read.
        public var messages = 0
        /// Times messages were lost (receive-buffer overrun) and the state was read again.
        public var resyncs = 0
    }

    private let core: MonitorCore

    private init(core: MonitorCore) {
        self.core = core
    }

    deinit { stop() }

    /// Starts monitoring. When this returns, `currentPath` is complete: links, addresses, routes and the
    /// given targets have all been read from the kernel (host names resolved, within the timeout).
    /// - Throws: `ReachabilityError` `.netlinkUnavailable` when netlink cannot be used (restricted sandbox),
    ///   `.namespaceUnavailable` when the configured network namespace cannot be opened or entered.
    public static func start(
        _ configuration: Configuration = Configuration(), targets: [ReachabilityTarget] = []
    ) async throws -> ReachabilityMonitor {
        var seen = Set<ReachabilityTarget>()
        let watched = await resolve(targets.filter { seen.insert($0).inserted }, timeout: configuration.resolutionTimeout)
        let core = try MonitorCore(resolutionTimeout: configuration.resolutionTimeout)
        let loop = MonitorLoop(configuration: configuration, core: core, targets: watched)
        let readiness = OneShot<Result<NetworkPath, ReachabilityError>>()
        do {
            try core.service.start(name: "pinpath-netlink") { _ in loop.run(ready: readiness.fulfil) }
        } catch {
            throw ReachabilityError(.netlinkUnavailable, error.description)
        }
        if case .failure(let error) = await readiness.value() {
            core.service.stop()
            throw error
        }
        return ReachabilityMonitor(core: core)
    }

    /// Stops monitoring, joins the netlink thread, and ends every `changes()` stream. Idempotent. May be
    /// called from a change handler: the thread then finishes its current batch and exits on its own.
    public func stop() {
        core.service.stop()
        core.finish()
    }

    /// Returns once the monitor has stopped: through `stop()`, or because netlink failed (see `failure`).
    /// Not cancellable: cancel by calling `stop()`.
    public func waitUntilStopped() async { await core.stopped.value() }

    /// The latest snapshot. Never stale by more than the time to process the kernel's last message.
    public var currentPath: NetworkPath { core.currentPath }

    /// Counters since start.
    public var statistics: Statistics { core.statistics }

    /// How long after the kernel's last message a route look-up may still see the state before it: the
    /// monitor's last settle recheck.
    package static var settlingTime: Duration { MonitorLoop.settleRechecks.last! }

    /// Every visible change from now on, in order and never duplicated. The stream begins with the current
    /// state (reason `initial`: the path, then each target), so a subscriber never has to ask separately.
    /// It ends when the monitor stops or fails; a failure is also in `failure`.
    public func changes() -> AsyncStream<ReachabilityEvent> { core.subscribe() }

    /// Calls `handler` with every visible change, on the monitor's own thread, as soon as it is known: the
    /// current state first (reason `initial`), then each change in order. The lowest-latency way to
    /// follow changes (no hop to another thread); the price is that a slow handler delays the next event,
    /// so keep it short. It may call `stop()`.
    /// - Returns: an identifier for `removeChangeHandler`.
    @discardableResult
    public func onChange(_ handler: @escaping @Sendable (ReachabilityEvent) -> Void) -> Int {
        let id = core.nextSubscriberID()
        core.post(.addHandler(id, handler))
        return id
    }

    /// Stops calling a handler added with `onChange`.
    public func removeChangeHandler(_ id: Int) { core.removeHandler(id) }

    /// Why the monitor stopped on its own (netlink failed after start), if it did.
    public var failure: ReachabilityError? { core.failure }

    /// Starts watching a target, replacing one of the same name. Host names are resolved first (bounded by
    /// the configuration's timeout) and again whenever the network comes back or changes interface.
    /// - Returns: the target's reachability, already part of `currentPath`.
    /// - Throws: `ReachabilityError` `.notRunning` after `stop()`; `CancellationError` if the task is
    ///   cancelled first (the target may still be added).
    @discardableResult
    public func addTarget(_ target: ReachabilityTarget) async throws -> TargetReachability {
        let watched = WatchedTarget(target: target, resolution: await HostResolver.resolve(target, timeout: core.resolutionTimeout))
        return try await ask { reply in .addTarget(watched, reply) }
    }

    /// Stops watching a target, given as it was added.
    public func removeTarget(_ target: ReachabilityTarget) {
        core.post(.removeTarget(target.description))
    }

    /// Asks the kernel once whether `target` is reachable now, without watching it.
    /// - Throws: `ReachabilityError` `.notRunning` after `stop()`; `CancellationError` if cancelled first.
    public func reachability(of target: ReachabilityTarget) async throws -> TargetReachability {
        let watched = WatchedTarget(target: target, resolution: await HostResolver.resolve(target, timeout: core.resolutionTimeout))
        return try await ask { reply in .evaluate(watched, reply) }
    }

    /// Whether the internet can be reached over `family` (either family when `nil`): the kernel's verdict
    /// for the well-known destinations `currentPath` is computed from, with the reason when not. Only the
    /// route is asked for; no packet is sent and nothing is resolved.
    package func internetReachability(over family: IPFamily?) async throws -> TargetReachability {
        let families = family.map { [$0] } ?? IPFamily.allCases
        let probes = families.map(PathEvaluator.internetProbe)
        let watched = WatchedTarget(target: .host("internet"), resolution: .resolved(probes))
        return try await ask { reply in .evaluate(watched, reply) }
    }

    /// Whether `address` is routable now, and through what: the kernel's route, judged against the links and
    /// addresses the monitor has read (up, carrier, a usable source address). Answers the calling thread itself
    /// and never waits for the monitor's: a kept answer costs a lock, a new one a route look-up (one system call,
    /// no DNS, no packet). Answers are kept until the monitor reads the kernel's next change, and only once the
    /// kernel has settled since the last (``settlingTime``). Safe from any thread, libcurl's callbacks included.
    /// - Throws: ``ReachabilityError`` `.notRunning` after `stop()`.
    package func routeVerdict(for address: IPAddress) throws(ReachabilityError) -> TargetReachability {
        try core.routeVerdicts.verdict(for: address)
    }

    private func ask(_ command: (@escaping MonitorCore.Reply) -> MonitorCore.Command) async throws
        -> TargetReachability
    {
        // Cancellation answers at once; the monitor's own answer, arriving later, is then ignored.
        let answer = OneShot<Result<TargetReachability, any Error>>()
        return try await withTaskCancellationHandler {
            core.post(command { answer.fulfil($0.mapError { $0 }) })
            return try await answer.value().get()
        } onCancel: {
            answer.fulfil(.failure(CancellationError()))
        }
    }

    private static func resolve(_ targets: [ReachabilityTarget], timeout: Duration) async -> [WatchedTarget] {
        await withTaskGroup(of: (Int, WatchedTarget).self) { group in
            for (index, target) in targets.enumerated() {
                group.addTask { (index, WatchedTarget(target: target, resolution: await HostResolver.resolve(target, timeout: timeout))) }
            }
            var resolved: [(Int, WatchedTarget)] = []
            for await result in group { resolved.append(result) }
            return resolved.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}
