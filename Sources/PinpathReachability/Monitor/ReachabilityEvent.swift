/// What the kernel did that led to a change. Raw values are the names used in JSON.
public enum ChangeReason: String, Sendable, Equatable, Codable {
    /// The state when monitoring started, or when a stream was subscribed.
    case initial
    case linkAdded = "link_added"
    case linkRemoved = "link_removed"
    /// An interface was brought administratively down or up.
    case linkDown = "link_down"
    case linkUp = "link_up"
    case carrierLost = "carrier_lost"
    case carrierGained = "carrier_gained"
    case addressAdded = "address_added"
    case addressRemoved = "address_removed"
    /// An address left or entered the tentative/DAD-failed state.
    case addressChanged = "address_changed"
    case routeAdded = "route_added"
    case routeRemoved = "route_removed"
    /// A policy routing rule was added or removed.
    case ruleChanged = "rule_changed"
    /// Events were lost (receive-buffer overrun) and everything was read again from the kernel.
    case resync
    /// A target's host name was resolved again.
    case dnsResolved = "dns_resolved"
    case dnsFailed = "dns_failed"
    /// A target was added or removed through the API.
    case targetAdded = "target_added"
    /// Something changed that none of the above describes (an interface renamed, say).
    case linkChanged = "link_changed"
}

/// One change that a user of the monitor can see.
public enum ReachabilityEvent: Sendable, Equatable {
    /// Overall status, primary interface or kind, or a family's availability changed.
    case path(PathChange)
    /// A watched target's status or egress interface changed.
    case target(TargetChange)
}

/// The machine-wide path changed.
public struct PathChange: Sendable, Equatable {
    public var path: NetworkPath
    /// `nil` for the initial state.
    public var previous: NetworkPath?
    public var reason: ChangeReason
}

/// One watched target changed.
public struct TargetChange: Sendable, Equatable {
    public var target: TargetReachability
    /// `nil` for the initial state or a newly added target.
    public var previous: TargetReachability?
    public var reason: ChangeReason
    /// The machine-wide path at the time of the change.
    public var path: NetworkPath
}

extension NetworkPath {
    /// The part of a path a user sees; a change elsewhere (an MTU, a second address) emits nothing.
    fileprivate var visibleState: VisiblePathState {
        VisiblePathState(
            status: status, primaryIndex: primaryInterface?.index, primaryName: primaryInterface?.name,
            primaryKind: primaryInterface?.kind, ipv4: ipv4 != nil, ipv6: ipv6 != nil)
    }
}

private struct VisiblePathState: Equatable {
    var status: ReachabilityStatus
    var primaryIndex: Int?
    var primaryName: String?
    var primaryKind: InterfaceKind?
    var ipv4: Bool
    var ipv6: Bool
}

/// Compares two snapshots and lists the changes a user sees, path first, then targets in order.
/// - Parameter reason: explains a change, given the names of the interfaces it involved.
func visibleChanges(
    from old: NetworkPath, to new: NetworkPath, reason: (Set<String>) -> ChangeReason
) -> [ReachabilityEvent] {
    var events: [ReachabilityEvent] = []
    if old.visibleState != new.visibleState {
        let involved = [old, new].flatMap { [$0.primaryInterface?.name, $0.ipv4?.interfaceName, $0.ipv6?.interfaceName] }
        events.append(.path(PathChange(path: new, previous: old, reason: reason(Set(involved.compactMap { $0 })))))
    }
    for target in new.targets {
        let previous = old.target(target.target)
        if previous?.status != target.status || previous?.interfaceName != target.interfaceName {
            let involved = Set([previous?.interfaceName, target.interfaceName].compactMap { $0 })
            events.append(.target(TargetChange(target: target, previous: previous, reason: reason(involved), path: new)))
        }
    }
    return events
}
