import CLinuxShims
import CNetlink
import Glibc
import PinpathSupport

/// The netlink side of the monitor. Lives on the monitor thread and is touched by nothing else: it owns
/// the sockets, the kernel state and the targets, and hands finished snapshots and events to `MonitorCore`.
final class MonitorLoop {
    private let configuration: ReachabilityMonitor.Configuration
    private let core: MonitorCore
    private var events: NetlinkSocket!
    private var requests: NetlinkSocket!
    /// The epoll instance `serve` waits on; -1 until set up.
    private var waitSet: Int32 = -1
    private var state = KernelState()
    private var targets: [WatchedTarget]
    private var path: NetworkPath!
    /// The route answers `path` was computed from.
    private var pathRouteAnswers = RouteAnswers(destinations: [], answers: [])
    private var sysfsFacts: [String: (deviceType: String?, hasWirelessPhy: Bool)] = [:]
    /// Messages were lost and the last attempt to read everything again did not complete.
    private var needsResync = false
    /// Numbers each look-up of a host name, so that an older answer arriving late is dropped.
    private var resolutionSequence = 0
    /// When names that failed to resolve are tried again (while the network is reachable).
    private var nextResolutionRetry: ContinuousClock.Instant?
    static let resolutionRetryInterval: Duration = .seconds(30)
    /// The kernel announces some changes a moment before route look-ups see them (a deleted route is
    /// announced, then unlinked from the table; an address's prefix routes go after its RTM_DELADDR).
    /// Once the kernel goes quiet, the path is evaluated again after each of these delays, so a change
    /// whose announcement came early is still reported.
    static let settleRechecks: [Duration] = [.milliseconds(50), .seconds(1)]
    /// The next settle recheck, the ones after it, and the triggers since the kernel was last quiet.
    private var settle: (due: ContinuousClock.Instant, later: ArraySlice<Duration>, triggers: [Trigger])?
    /// The batch of messages being read, kept between batches so that reading one allocates nothing.
    private var messages: [NetlinkMessage] = []

    init(configuration: ReachabilityMonitor.Configuration, core: MonitorCore, targets: [WatchedTarget]) {
        self.configuration = configuration
        self.core = core
        self.targets = targets
    }

    deinit { if waitSet >= 0 { close(waitSet) } }

    /// Sets up, reports readiness (the first snapshot is complete by then), and serves events until stopped.
    func run(ready: (Result<NetworkPath, ReachabilityError>) -> Void) {
        do {
            try setUp()
        } catch let error as ReachabilityError {
            ready(.failure(error))
            return
        } catch {
            ready(.failure(ReachabilityError(.netlinkUnavailable, "\(error)")))
            return
        }
        ready(.success(path))
        serve()
    }

    private func setUp() throws {
        if let namespace = configuration.networkNamespace { try enterNetworkNamespace(namespace) }
        // Subscribe before dumping, so nothing that happens in between is missed.
        events = try NetlinkSocket(subscribingTo: NetlinkSocket.monitorGroups)
        events.setReceiveBuffer(bytes: configuration.receiveBufferSize)
        requests = try NetlinkSocket()
        requests.setReceiveBuffer(bytes: 1 << 20)
        try core.routeVerdicts.openSocket()
        waitSet = try makeWaitSet()
        state = try readKernelState()
        core.routeVerdicts.advance(to: state)
        path = evaluatePath(answers: lookUpPathRoutes())
        core.publish(path, events: [])
        scheduleResolutionRetry()
    }

    /// An evaluator whose route answers for `destinations` were fetched from the kernel in one batch.
    private func evaluator(for destinations: [IPAddress]) -> PathEvaluator {
        evaluator(answers: requests.lookUpRoutes(to: destinations))
    }

    private func evaluator(answers: RouteAnswers) -> PathEvaluator {
        PathEvaluator(state: state, lookUpRoute: { answers[$0] ?? .failed(errno: EIO) })
    }

    /// The route answers a whole snapshot needs: the internet probes and every target's addresses.
    private func lookUpPathRoutes() -> RouteAnswers {
        requests.lookUpRoutes(to: PathEvaluator.destinations(of: targets))
    }

    private func evaluatePath(answers: RouteAnswers) -> NetworkPath {
        pathRouteAnswers = answers
        return evaluator(answers: answers).path(targets: targets)
    }

    /// Waits for the event socket and the wake eventfd with epoll rather than poll(2): poll registers with
    /// both descriptors and polls them again on every call, and the thread waits once per netlink event.
    private func makeWaitSet() throws -> Int32 {
        let waitSet = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard waitSet >= 0 else {
            throw ReachabilityError(.netlinkUnavailable, "cannot create an epoll instance: \(String(cString: strerror(errno)))")
        }
        for (descriptor, tag) in [(events.fileDescriptor, Self.netlinkReady), (core.wakeDescriptor, Self.wakeReady)] {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u32 = tag
            guard epoll_ctl(waitSet, EPOLL_CTL_ADD, descriptor, &event) == 0 else {
                let reason = String(cString: strerror(errno))
                close(waitSet)
                throw ReachabilityError(.netlinkUnavailable, "cannot watch a descriptor with epoll: \(reason)")
            }
        }
        return waitSet
    }
    private static let netlinkReady: UInt32 = 0
    private static let wakeReady: UInt32 = 1

    private func serve() {
        var readyEvents = [epoll_event](repeating: epoll_event(), count: 2)
        var commands: [MonitorCore.Command] = []
        while true {
            // Waits unless commands (or a stop) are already in: the core's eventfd wakes the wait for those
            // posted from now on.
            let waited = core.service.waitForWork(ifIdle: \.isEmpty) {
                epoll_wait(waitSet, &readyEvents, Int32(readyEvents.count), pollTimeout())
            }
            let ready = waited ?? 0
            if ready < 0 {
                if errno == EINTR { continue }
                core.fail(ReachabilityError(.netlinkUnavailable, "epoll_wait failed: \(String(cString: strerror(errno)))"))
                return
            }
            var netlinkReady = false
            for event in readyEvents[..<Int(ready)] {
                if event.data.u32 == Self.wakeReady {
                    var counter: UInt64 = 0
                    _ = read(core.wakeDescriptor, &counter, 8)
                } else {
                    netlinkReady = true
                }
            }
            let running = core.takeCommands(into: &commands)
            for command in commands {
                if running { handle(command) } else { command.reject() }
            }
            commands.removeAll(keepingCapacity: true)
            guard running else { return }
            if netlinkReady {
                readNetlink()
            } else if waited == 0, needsResync {
                resync()
            }
            if let due = settle?.due, ContinuousClock.now >= due { recheckSettled() }
            if let retry = nextResolutionRetry, ContinuousClock.now >= retry {
                nextResolutionRetry = nil
                resolveHostTargets { $0.resolution == .failed }
            }
        }
    }

    /// Milliseconds `epoll_wait` may sleep: for ever, unless a resync is owed (the kernel kept interrupting the
    /// dump: retry every 100 ms), a settle recheck is due, or failed names are due to be resolved again.
    private func pollTimeout() -> Int32 {
        if needsResync { return 100 }
        var next = settle?.due
        if let retry = nextResolutionRetry { next = min(next ?? retry, retry) }
        guard let next else { return -1 }
        return Int32(clamping: max(0, ContinuousClock.now.duration(to: next).millisecondsRoundedUp))
    }

    /// Restarts the settle rechecks from now, remembering what the kernel did so a late change is explained.
    private func scheduleSettleRechecks(after triggers: [Trigger]) {
        var pending = settle?.triggers ?? []
        for trigger in triggers where !pending.contains(trigger) { pending.append(trigger) }
        let delays = Self.settleRechecks[...]
        settle = (.now + delays.first!, delays.dropFirst(), pending)
    }

    private func recheckSettled() {
        guard let current = settle else { return }
        settle = current.later.first.map { (.now + $0, current.later.dropFirst(), current.triggers) }
        // Every message and command recomputes at once, so since the last snapshot only the kernel's routes
        // can have moved: the same answers give the same path, and the usual recheck costs one look-up.
        let answers = lookUpPathRoutes()
        guard answers != pathRouteAnswers else { return }
        // The routes moved after the kernel went quiet: what was answered since may rest on the old ones.
        core.routeVerdicts.advance(to: state)
        recompute(current.triggers, answers: answers)
    }

    // MARK: Netlink messages

    private func readNetlink() {
        messages.removeAll(keepingCapacity: true)
        // Bounded, so a flood cannot keep the snapshot from being recomputed.
        let lostEvents = events.receiveEvents(into: &messages, limit: 4096).lost
        core.count(messages: messages.count, overrun: lostEvents)
        let triggers = messages.compactMap(apply)
        if lostEvents || needsResync {
            needsResync = true
            resync()
        } else if !messages.isEmpty {
            core.routeVerdicts.advance(to: state)
            recompute(triggers)
            if !triggers.isEmpty { scheduleSettleRechecks(after: triggers) }
        }
    }

    /// Reads links and addresses again after lost messages. What is queued is dropped first: the dump
    /// supersedes it, and only messages sent after the dump began may be applied on top. A dump the
    /// kernel interrupts (the tables changed under it) is retried at once a few times, then every 100 ms.
    private func resync() {
        events.discardPending()
        // Messages were lost: whatever was answered may rest on a change never read.
        defer { core.routeVerdicts.advance(to: state) }
        guard let fresh = try? readKernelState() else { return }
        state = fresh
        needsResync = false
        let triggers = [Trigger(reason: .resync, interfaceName: nil)]
        recompute(triggers)
        scheduleSettleRechecks(after: triggers)
    }

    private func apply(_ message: NetlinkMessage) -> Trigger? {
        switch message {
        case .link(var link):
            addSysfsFacts(to: &link)
            return state.apply(link: link).map { Trigger(reason: $0, interfaceName: link.name) }
        case .linkRemoved(let index, let name):
            sysfsFacts[name] = nil
            return state.removeLink(index: index).map { Trigger(reason: $0, interfaceName: name) }
        case .address(let address):
            return state.apply(address: address).map {
                Trigger(reason: $0, interfaceName: state.links[address.key.interfaceIndex]?.name)
            }
        case .addressRemoved(let key):
            return state.removeAddress(key).map { Trigger(reason: $0, interfaceName: state.links[key.interfaceIndex]?.name) }
        case .route(let added, let index):
            return Trigger(reason: added ? .routeAdded : .routeRemoved, interfaceName: index.flatMap { state.links[$0]?.name })
        case .rule:
            return Trigger(reason: .ruleChanged, interfaceName: nil)
        case .linkProtocolInfo, .other:
            return nil
        }
    }

    private func readKernelState() throws -> KernelState {
        var fresh = try requests.dumpState()
        for var link in fresh.links.values {
            addSysfsFacts(to: &link)
            _ = fresh.apply(link: link)
        }
        return fresh
    }

    /// DEVTYPE and phy80211 tell Wi-Fi and WWAN from Ethernet; read once per interface name, and only for
    /// devices that netlink does not already classify.
    private func addSysfsFacts(to link: inout LinkRecord) {
        guard link.kindFacts.infoKind == nil, link.kindFacts.hardwareType != HardwareType.loopback else { return }
        let facts: (deviceType: String?, hasWirelessPhy: Bool)
        if let known = sysfsFacts[link.name] {
            facts = known
        } else {
            facts = SysfsNetDevice(name: link.name).kindFacts
            sysfsFacts[link.name] = facts
        }
        link.kindFacts.deviceType = facts.deviceType
        link.kindFacts.hasWirelessPhy = facts.hasWirelessPhy
    }

    // MARK: Snapshots and events

    private func recompute(_ triggers: [Trigger], answers: RouteAnswers? = nil) {
        let previous = path!
        path = evaluatePath(answers: answers ?? lookUpPathRoutes())
        let changes = visibleChanges(from: previous, to: path) { involved in Trigger.explaining(involved, from: triggers) }
        core.publish(path, events: changes)
        if Self.shouldResolveAgain(from: previous, to: path) { resolveHostTargets { _ in true } }
        scheduleResolutionRetry()
    }

    /// A name that failed stays failed until asked again: retry every 30 s while the network is reachable
    /// (right after a reconnect, DNS is often configured a moment after the route).
    private func scheduleResolutionRetry() {
        let anyFailed = targets.contains { $0.resolution == .failed }
        if path.status == .reachable, anyFailed {
            if nextResolutionRetry == nil { nextResolutionRetry = .now + Self.resolutionRetryInterval }
        } else {
            nextResolutionRetry = nil
        }
    }

    /// Names may have moved to other addresses once the network comes back or changes hands.
    private static func shouldResolveAgain(from old: NetworkPath, to new: NetworkPath) -> Bool {
        new.status == .reachable && (old.status != .reachable || old.primaryInterface?.name != new.primaryInterface?.name)
    }

    private func resolveHostTargets(where include: (WatchedTarget) -> Bool) {
        let timeout = configuration.resolutionTimeout
        for index in targets.indices where include(targets[index]) {
            guard case .host = targets[index].target else { continue }
            resolutionSequence += 1
            targets[index].pendingResolution = resolutionSequence
            let core = self.core
            let name = targets[index].target
            let sequence = resolutionSequence
            // A task, not a thread: it waits for the look-up on the blocking pool and for its bound.
            Task {
                let resolution = await HostResolver.resolve(name, timeout: timeout)
                core.post(.resolved(name, sequence, resolution))
            }
        }
    }

    private func handle(_ command: MonitorCore.Command) {
        switch command {
        case .addTarget(let target, let reply):
            targets.removeAll { $0.target == target.target }
            targets.append(target)
            recompute([Trigger(reason: .targetAdded, interfaceName: nil)])
            reply(.success(path.target(target.target.description)!))
        case .removeTarget(let name):
            targets.removeAll { $0.target.description == name }
            recompute([])
        case .resolved(let target, let sequence, let resolution):
            // Only the latest look-up counts: an older one that timed out must not undo a newer answer.
            guard let index = targets.firstIndex(where: { $0.target == target }),
                targets[index].pendingResolution == sequence
            else { return }
            targets[index].pendingResolution = nil
            guard targets[index].resolution != resolution else { return scheduleResolutionRetry() }
            targets[index].resolution = resolution
            recompute([Trigger(reason: resolution == .failed ? .dnsFailed : .dnsResolved, interfaceName: nil)])
        case .evaluate(let target, let reply):
            reply(.success(evaluator(for: PathEvaluator.destinations(of: [target], includingProbes: false)).reachability(of: target)))
        case .addHandler(let id, let handler):
            core.addHandler(id, handler)
        }
    }

    private func enterNetworkNamespace(_ namespace: String) throws {
        let path = namespace.contains("/") ? namespace : "/run/netns/\(namespace)"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ReachabilityError(
                .namespaceUnavailable, "network namespace \"\(namespace)\" cannot be opened (\(path)): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        guard pinpath_setns_net(fd) == 0 else {
            throw ReachabilityError(
                .namespaceUnavailable, "cannot enter network namespace \"\(namespace)\": \(String(cString: strerror(errno)))")
        }
    }
}

/// What the kernel did in one batch of messages, and on which interface.
struct Trigger: Equatable {
    var reason: ChangeReason
    var interfaceName: String?

    /// Link-level causes explain more than address-level ones, which explain more than routes.
    private var weight: Int {
        switch reason {
        case .resync: return 6
        case .linkRemoved, .linkAdded: return 5
        case .linkDown, .linkUp, .carrierLost, .carrierGained: return 4
        case .addressAdded, .addressRemoved, .addressChanged: return 3
        case .routeAdded, .routeRemoved, .ruleChanged: return 2
        default: return 1
        }
    }

    /// The reason to give for a change that involved `interfaces`: the weightiest trigger on one of them or
    /// on no interface in particular, the earliest among equals; any trigger if none of them is related.
    static func explaining(_ interfaces: [String], from triggers: [Trigger]) -> ChangeReason {
        func isRelated(_ trigger: Trigger) -> Bool { trigger.interfaceName.map(interfaces.contains) ?? true }
        let anyRelated = triggers.contains(where: isRelated)
        var best: Trigger?
        // `>`, not `>=`: the earliest of equals stays.
        for trigger in triggers where !anyRelated || isRelated(trigger) {
            if best.map({ trigger.weight > $0.weight }) ?? true { best = trigger }
        }
        return best?.reason ?? .linkChanged
    }
}
