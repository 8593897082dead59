import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSupport
import Synchronization

/// What `GET /api/v1/status` shows, kept up to date where the agent learns it: each probe's result (the agent's
/// actor), the events as they are written (the state changes, pin failures, reloads, the path's and the
/// connectivity check's changes), the monitor's path and the configuration. A probe's result updates one
/// record; nothing is rendered until a client asks. Readers copy a ``StatusSnapshot`` under a short lock and
/// render it without the lock (``StatusDocument``), so a request never holds up a probe and rendering 1,000
/// endpoints happens on the listener's thread, not the agent's actor.
///
/// Safe from any thread: the state sits behind a `Mutex`.
final class StatusStore: Sendable {
    private struct State {
        var snapshot: StatusSnapshot
        /// Where each endpoint is in ``StatusSnapshot/endpoints``.
        var position: [String: Int] = [:]
        /// The last events of interest; the snapshot gets them oldest first.
        var events = Ring<StatusEvent>(capacity: StatusStore.eventsKept)
    }

    /// How many events the document lists.
    static let eventsKept = 50

    private let state: Mutex<State>

    /// - Parameters:
    ///   - configurationPath: the file the agent was started with, as `agent.started` names it.
    ///   - started: when the agent started.
    init(configurationPath: String, started: Date = Date()) {
        state = Mutex(
            State(snapshot: StatusSnapshot(configurationPath: configurationPath, startedAt: started)))
    }

    /// A copy of the status now, to render without the lock.
    func snapshot() -> StatusSnapshot {
        state.withLock { state in
            var snapshot = state.snapshot
            snapshot.events = state.events.elements
            return snapshot
        }
    }

    /// Takes the configuration, at start (`change` nil) and after a reload: endpoints in its order, those new or
    /// changed starting afresh (as the agent restarts them), the others keeping what they showed.
    func configure(_ configuration: AgentConfiguration, change: ConfigurationChange? = nil) {
        let afresh = Set((change?.added ?? []) + (change?.changed ?? []))
        let configured = configuration.endpoints.map(EndpointStatus.Configured.init)
        let shortest = configured.map(\.intervalMilliseconds).min() ?? 0
        state.withLock { state in
            var records: [EndpointStatus] = []
            records.reserveCapacity(configured.count)
            for endpoint in configured {
                if !afresh.contains(endpoint.name), let index = state.position[endpoint.name] {
                    var kept = state.snapshot.endpoints[index]
                    kept.configured = endpoint
                    records.append(kept)
                } else {
                    records.append(EndpointStatus(endpoint))
                }
            }
            state.snapshot.endpoints = records
            state.position = Dictionary(records.enumerated().map { ($1.configured.name, $0) }, uniquingKeysWith: { first, _ in first })
            state.snapshot.refreshMilliseconds = StatusSnapshot.refreshMilliseconds(shortestInterval: shortest)
        }
    }

    /// Takes a probe's result that the agent recorded for its endpoint (not a stale one from before a reload).
    func probed(_ result: ProbeResult) {
        let update = EndpointStatus.ProbeUpdate(result)
        state.withLock { state in
            guard let index = state.position[result.endpoint] else { return }
            state.snapshot.endpoints[index].apply(update)
        }
    }

    /// Takes the monitor's path.
    func update(path: NetworkPath) {
        let members = path.jsonMembers([.status, .interface, .kind, .gateways, .ipv4, .ipv6])
        state.withLock { $0.snapshot.path = members }
    }

    /// A reload's outcome: `errors` nil when it was applied, the problems' lines when the file was rejected.
    func reloaded(errors: [String]?) {
        let reload = StatusSnapshot.Reload(time: UTCTime.now(), errors: errors)
        state.withLock { $0.snapshot.lastReload = reload }
    }

    /// Sees an event as the agent writes it: an event of interest joins the ring, and a state change, the
    /// connectivity check's verdict and the path's change update what they are about.
    func observe(_ event: AgentEvent) {
        // Every probe's `probe.completed` passes here (`events.probes: all`): it costs one set look-up.
        guard StatusEvent.ofInterest.contains(event.name) else { return }
        let time = UTCTime.now()
        guard let entry = StatusEvent(event, time: time) else { return }
        let fields = EventFields(event.fields)
        state.withLock { state in
            switch event.name {
            case EventCatalog.endpointStateChanged.name:
                guard let name = entry.endpoint, let index = state.position[name] else { break }
                if let text = fields.string("state"), let status = EndpointState.Status(rawValue: text) {
                    state.snapshot.endpoints[index].state = status
                    state.snapshot.endpoints[index].since = time
                }
                if let cause = fields.string("cause") { state.snapshot.endpoints[index].cause = cause }
            case EventCatalog.connectivityChanged.name:
                if let verdict = fields.string("state") {
                    state.snapshot.connectivity = StatusSnapshot.Connectivity(state: verdict, since: time, reason: fields.string("reason"))
                }
            case EventCatalog.reachabilityChanged.name:
                state.snapshot.pathReason = fields.string("reason")
            default:
                break
            }
            state.events.append(entry)
        }
    }
}

/// A copy of the status at one moment: what ``StatusDocument`` renders.
struct StatusSnapshot: Sendable {
    /// The page refreshes at most this often.
    static let minimumRefreshMilliseconds = 5000
    /// The page refreshes at least this often: the path, connectivity and events change between probes, and a
    /// browser's `setTimeout` runs a delay past 2³¹−1 ms at once (a 30-day interval made the page poll
    /// continuously).
    static let maximumRefreshMilliseconds = 60_000

    /// How often a page should ask again: the shortest endpoint interval, within the two bounds.
    static func refreshMilliseconds(shortestInterval: Int) -> Int {
        min(maximumRefreshMilliseconds, max(minimumRefreshMilliseconds, shortestInterval))
    }

    /// A reload's outcome.
    struct Reload: Sendable {
        var time: String
        /// `nil`: applied.
        var errors: [String]?
    }

    /// The connectivity check's last verdict.
    struct Connectivity: Sendable {
        var state: String
        var since: String
        var reason: String?
    }

    var configurationPath: String
    var startedAt: Date
    var refreshMilliseconds = minimumRefreshMilliseconds
    var lastReload: Reload?
    /// The path's own fields, as events write them; empty before the first snapshot.
    var path: [(String, JSONValue)] = []
    /// The last `reachability.changed`'s reason.
    var pathReason: String?
    var connectivity: Connectivity?
    /// In configuration order.
    var endpoints: [EndpointStatus] = []
    /// Oldest first.
    var events: [StatusEvent] = []

    init(configurationPath: String, startedAt: Date) {
        self.configurationPath = configurationPath
        self.startedAt = startedAt
    }
}
