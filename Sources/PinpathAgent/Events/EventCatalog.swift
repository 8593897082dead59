import PinpathReachability
import PinpathSupport

/// One type of event the agent writes: its name, the names of its fields (everything after the envelope), in
/// the order they are written, and the levels it may have.
public struct EventKind: Sendable, Equatable {
    /// The `event` value, such as `agent.started`.
    public let name: String
    /// The fields after the envelope, in order.
    public let fields: [String]
    /// The levels an event of this kind may have, its usual one first; which one a given event has follows
    /// from its fields (the README's event table says how).
    public let levels: [EventLevel]

    init(name: String, fields: [String], levels: [EventLevel] = [.info]) {
        self.name = name
        self.fields = fields
        self.levels = levels
    }
}

/// Every event the agent writes, with its fields. The builders in ``AgentEvents`` write exactly these (checked when an event is built), and a test checks the README's event reference
/// against this table, so the output, the table and the documentation cannot drift apart.
public enum EventCatalog {
    /// Once, after the first path snapshot.
    public static let agentStarted = EventKind(
        name: "agent.started", fields: ["version", "config", "endpoints", "once", "path", "warnings"], levels: [.info, .warning])
    /// The last line.
    public static let agentStopping = EventKind(
        name: "agent.stopping",
        fields: ["reason", "uptime_s", "probes", "failures", "pin_failures", "events_dropped", "schedule_lateness_ms"])
    /// A reload applied a valid file. `restart_required` is written only when the events output or the
    /// metrics textfile changed.
    public static let configReloaded = EventKind(
        name: "config.reloaded", fields: ["config", "endpoints", "added", "removed", "changed", "warnings", "restart_required"],
        levels: [.info, .warning])
    /// A reload found the file invalid; the running configuration stays.
    public static let configRejected = EventKind(name: "config.rejected", fields: ["config", "errors"], levels: [.error])
    /// The path as a whole changed.
    public static let reachabilityChanged = EventKind(
        name: "reachability.changed",
        fields: ["status", "previous_status", "interface", "kind", "reason", "ipv4", "ipv6", "expensive", "gateways"],
        levels: [.info, .warning])
    /// A watched host (a configured target, an endpoint's host) changed.
    public static let reachabilityTargetChanged = EventKind(
        name: "reachability.target_changed",
        fields: ["target", "status", "previous_status", "interface", "reason", "detail", "address"], levels: [.info, .warning])
    /// The connectivity check's verdict changed (the first verdict after start too, with `previous` null).
    public static let connectivityChanged = EventKind(
        name: "connectivity.changed", fields: ["state", "previous", "reason", "url", "phases_ms", "total_ms"],
        levels: [.info, .warning, .error])
    /// An endpoint's state changed. `connectivity` is the check's state then (`null` without one).
    public static let endpointStateChanged = EventKind(
        name: "endpoint.state_changed",
        fields: ["endpoint", "url", "state", "previous_state", "cause", "consecutive", "connectivity", "probe"],
        levels: [.info, .warning, .error])
    /// Every probe, with `events.probes: all` (and `run --once`).
    public static let probeCompleted = EventKind(
        name: "probe.completed",
        fields: [
            "endpoint", "outcome", "status_code", "phases_ms", "total_ms", "remote_address", "tls_version", "served_chain",
            "error_category", "message", "profile", "connectivity",
        ], levels: [.info, .warning])
    /// A pin mismatch (enforced or report-only), not suppressed. `message` is the failure's full account (the
    /// validated chain's pins and subjects, then the pins expected), written here only; `served_chain` summarizes
    /// each certificate the server sent. The fields after it are the pin failure report's (RFC 7469's and
    /// TrustKit's names), its PEM arrays only with `events.include_certificates`. A failure seen by a probe of a
    /// target a scraper named (`/probe`) has `endpoint` null and the `module` and `target`; an endpoint's has those
    /// null.
    public static let pinFailure = EventKind(
        name: "pin.failure",
        fields: [
            "endpoint", "module", "target", "enforced", "message", "profile", "connectivity", "suppressed", "served_chain", "date-time",
            "hostname", "port", "noted-hostname",
            "include-subdomains", "effective-expiration-date", "served-certificate-chain", "validated-certificate-chain",
            "known-pins", "enforce-pinning", "validation-result",
        ], levels: [.error, .warning])
    /// A pin failure report arrived at a `report_uri` collector.
    public static let reportDelivered = EventKind(
        name: "report.delivered", fields: ["url", "endpoint", "hostname", "port", "attempts", "status_code", "dropped"])
    /// A pin failure report did not arrive at a `report_uri` collector after its last try, or before the agent stopped.
    public static let reportDeliveryFailed = EventKind(
        name: "report.delivery_failed",
        fields: ["url", "endpoint", "hostname", "port", "attempts", "reason", "status_code", "message", "dropped"],
        levels: [.warning])
    /// A verified-chain certificate crossed a `cert_expiry_warning` threshold.
    public static let certificateExpiring = EventKind(
        name: "tls.certificate_expiring",
        fields: [
            "endpoint", "host", "subject", "depth", "not_after", "days_left", "threshold", "earliest_served_expiry",
            "verified_chain_expiry",
        ],
        levels: [.warning])
    /// A certificate of a built chain that reaches a trust anchor for the host is past its notAfter (`depth` in
    /// that chain), once per certificate (``ExpiryCheck``); an error, the chain validated or not. Not for a
    /// refused chain whose server did not prove it holds the leaf's key (a replay: the probe is `tls_invalid`).
    public static let certificateExpired = EventKind(
        name: "tls.certificate_expired",
        fields: ["endpoint", "host", "subject", "depth", "not_after", "days_expired", "chain_validated"], levels: [.error])
    /// The OCSP status of an endpoint's leaf (`revocation: ocsp`) changed, the first one after start included
    /// (`previous_status` null): `good` is info, `unknown` and `unavailable` (a soft failure too) warning,
    /// `revoked` error.
    public static let revocationChecked = EventKind(
        name: "revocation.checked",
        fields: [
            "endpoint", "host", "status", "previous_status", "source", "responder_url", "next_update", "soft_failed", "detail",
        ], levels: [.info, .warning, .error])
    /// The first line written after lines were lost.
    public static let eventsDropped = EventKind(name: "events.dropped", fields: ["count", "reason", "error"], levels: [.warning])
    /// The metrics textfile could not be written: once per failure streak (the writes go on every 5 s, and
    /// `pinpath_metrics_write_failures_total` counts each).
    public static let metricsWriteFailed = EventKind(
        name: "metrics.write_failed", fields: ["file", "error", "errno"], levels: [.error])

    /// Every event, in the README's order.
    public static let all: [EventKind] = [
        agentStarted, agentStopping, configReloaded, configRejected, reachabilityChanged, reachabilityTargetChanged,
        connectivityChanged, endpointStateChanged, probeCompleted, pinFailure, reportDelivered, reportDeliveryFailed, certificateExpiring,
        certificateExpired, revocationChecked, eventsDropped,
        metricsWriteFailed,
    ]
}

extension EventCatalog {
    /// The event reporting a reachability change (its fields are the change's ``ReachabilityEvent/jsonFields``),
    /// and its level: `warning` when the path or the target is no longer reachable, `info` otherwise. The agent
    /// and `pinpath watch --json` write it the same way.
    public static func reachability(_ change: ReachabilityEvent) -> (kind: EventKind, level: EventLevel) {
        let kind =
            switch change {
            case .path: reachabilityChanged
            case .target: reachabilityTargetChanged
            }
        return (kind, change.isReachable ? .info : .warning)
    }
}

/// One event ready to write: its type and its fields.
struct AgentEvent: Sendable {
    let name: String
    let level: EventLevel
    let fields: [(String, JSONValue)]

    /// An event of `kind`. The fields must be the catalog's, in its order; an optional field (such as
    /// `restart_required`) may be left out. The level must be one of the kind's, its usual one by default.
    init(_ kind: EventKind, _ fields: [(String, JSONValue)], level: EventLevel? = nil) {
        assert(Self.conforms(fields.map(\.0), to: kind.fields), "\(kind.name): fields \(fields.map(\.0)) differ from the catalog's")
        assert(level.map(kind.levels.contains) ?? true, "\(kind.name): level \(level!) is not among \(kind.levels)")
        name = kind.name
        self.level = level ?? kind.levels[0]
        self.fields = fields
    }

    /// Whether `names` are `catalog` in order, some left out.
    private static func conforms(_ names: [String], to catalog: [String]) -> Bool {
        var remaining = catalog[...]
        for name in names {
            guard let index = remaining.firstIndex(of: name) else { return false }
            remaining = remaining[(index + 1)...]
        }
        return true
    }
}
