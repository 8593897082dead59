import PinpathReachability

/// What a reload changes, found by comparing the running and the new configuration as values: an endpoint
/// is changed when its whole ``EndpointConfiguration`` differs (everything its probe depends on, the
/// policies a redirect may reach included), never by a list of fields that the next field would miss.
struct ConfigurationChange: Sendable, Equatable {
    /// Endpoints only the new configuration has, in its order.
    let added: [String]
    /// Endpoints only the running configuration has, in its order.
    let removed: [String]
    /// Endpoints both have, with a different configuration, in the new order.
    let changed: [String]
    /// Reachability targets the monitor starts watching, and those it stops watching.
    let addedTargets: [ReachabilityTarget]
    let removedTargets: [ReachabilityTarget]
    /// What takes effect only at the next start: the outputs (`events`, `metrics`) and the `connectivity`
    /// check; empty when none changed.
    let restartRequired: [String]

    init(from old: AgentConfiguration, to new: AgentConfiguration) {
        let oldEndpoints = Dictionary(old.endpoints.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let newNames = Set(new.endpoints.map(\.name))
        removed = old.endpoints.map(\.name).filter { !newNames.contains($0) }
        added = new.endpoints.filter { oldEndpoints[$0.name] == nil }.map(\.name)
        changed = new.endpoints.filter { endpoint in oldEndpoints[endpoint.name].map { $0 != endpoint } ?? false }.map(\.name)
        let oldTargets = old.watchedTargets
        let newTargets = new.watchedTargets
        removedTargets = oldTargets.filter { !newTargets.contains($0) }
        addedTargets = newTargets.filter { !oldTargets.contains($0) }
        let outputsChanged =
            new.events.restartSettings != old.events.restartSettings || new.metricsTextfile != old.metricsTextfile
            || new.metricsListen != old.metricsListen
            || new.metricsProbeMaxInFlight != old.metricsProbeMaxInFlight
        restartRequired = (outputsChanged ? ["events", "metrics"] : []) + (new.connectivity != old.connectivity ? ["connectivity"] : [])
    }
}

extension AgentConfiguration {
    /// The monitor's targets: the configured ones, then each endpoint's host, once each.
    var watchedTargets: [ReachabilityTarget] {
        var seen = Set<ReachabilityTarget>()
        let hosts = endpoints.compactMap(EndpointTracker.host(of:)).compactMap { try? ReachabilityTarget(parsing: $0) }
        return (reachabilityTargets + hosts).filter { seen.insert($0).inserted }
    }
}
