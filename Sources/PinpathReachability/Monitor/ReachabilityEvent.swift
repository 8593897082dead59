/// One change that a user of the monitor can see.
public enum ReachabilityEvent: Sendable, Equatable {
    /// Overall status, primary interface or kind, or a family's availability changed.
    case path(PathChange)
    /// A watched target's status or egress interface changed.
    case target(TargetChange)
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
/// - Parameter reason: explains a change, given the names of the interfaces it involved (a name may repeat).
func visibleChanges(
    from old: NetworkPath, to new: NetworkPath, reason: ([String]) -> ChangeReason
) -> [ReachabilityEvent] {
    var events: [ReachabilityEvent] = []
    if old.visibleState != new.visibleState {
        let involved = [
            old.primaryInterface?.name, old.ipv4?.interfaceName, old.ipv6?.interfaceName,
            new.primaryInterface?.name, new.ipv4?.interfaceName, new.ipv6?.interfaceName,
        ]
        events.append(.path(PathChange(path: new, previous: old, reason: reason(involved.compactMap { $0 }))))
    }
    for target in new.targets {
        let previous = old.target(target.target)
        if previous?.status != target.status || previous?.interfaceName != target.interfaceName {
            let involved = [previous?.interfaceName, target.interfaceName].compactMap { $0 }
            events.append(.target(TargetChange(target: target, previous: previous, reason: reason(involved), path: new)))
        }
    }
    return events
}
