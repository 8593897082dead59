import PinpathReachability

/// The rules a monitor's event stream keeps, checked after the fact. "In order, never duplicated" means:
///
/// 1. The stream opens with the path (reason `initial`, no previous), then one `initial` event per target;
///    no later event is `initial`.
/// 2. Every later path event is a real change: what a user sees of the path (status, primary interface
///    and its kind, IPv4 and IPv6 availability) differs between `previous` and `path`.
/// 3. Path events chain: each one's `previous` shows what the last path event reported. An event lost,
///    repeated or delivered out of order breaks the chain.
/// 4. Target events chain the same way, per target, on status and egress interface, and each is a real
///    change of them.
/// 5. A target event carries the path that was last reported (a path change that caused it comes first).
enum EventStreamAudit {
    struct Counts: CustomStringConvertible {
        var pathEvents = 0
        var targetEvents = 0
        var reasons: [ChangeReason: Int] = [:]
        var description: String {
            let reasons = self.reasons.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }
            return "\(pathEvents) path events, \(targetEvents) target events; reasons: \(reasons.joined(separator: ", "))"
        }
    }

    /// What a user sees of a path: a change of anything else emits no event.
    struct Visible: Equatable, CustomStringConvertible {
        var status: ReachabilityStatus
        var primary: String?
        var primaryIndex: Int?
        var kind: InterfaceKind?
        var ipv4: Bool
        var ipv6: Bool

        init(_ path: NetworkPath) {
            status = path.status
            primary = path.primaryInterface?.name
            primaryIndex = path.primaryInterface?.index
            kind = path.primaryInterface?.kind
            ipv4 = path.ipv4 != nil
            ipv6 = path.ipv6 != nil
        }

        var description: String { "\(status.rawValue) via \(primary ?? "-") v4=\(ipv4) v6=\(ipv6)" }
    }

    /// Returns every broken rule (empty when the stream is sound) and the counts.
    static func check(_ events: [ReachabilityEvent], targets: [String]) -> (violations: [String], counts: Counts) {
        var violations: [String] = []
        var counts = Counts()
        var lastPath: Visible?
        var lastTarget: [String: TargetReachability] = [:]
        for (position, event) in events.enumerated() {
            let isOpening = position <= targets.count
            switch event {
            case .path(let change):
                counts.pathEvents += 1
                counts.reasons[change.reason, default: 0] += 1
                if position == 0 {
                    if change.reason != .initial || change.previous != nil {
                        violations.append("#0 is not the initial path: \(change.reason)")
                    }
                } else if change.reason == .initial || isOpening {
                    violations.append("#\(position): a path event where the opening target events belong (\(change.reason))")
                } else if let previous = change.previous {
                    if Visible(previous) == Visible(change.path) {
                        violations.append(
                            "#\(position): path event with nothing visible changed: \(Visible(change.path)) (\(change.reason))")
                    }
                    if Visible(previous) != lastPath {
                        violations.append(
                            "#\(position): previous \(Visible(previous)) but the last reported was \(lastPath?.description ?? "-")")
                    }
                } else {
                    violations.append("#\(position): a path change without a previous path")
                }
                lastPath = Visible(change.path)
            case .target(let change):
                counts.targetEvents += 1
                counts.reasons[change.reason, default: 0] += 1
                let name = change.target.target
                if isOpening {
                    if change.reason != .initial || name != targets[position - 1] {
                        violations.append(
                            "#\(position): expected the initial event of \(targets[position - 1]), got \(name) \(change.reason)")
                    }
                } else {
                    if change.reason == .initial { violations.append("#\(position): a late initial event for \(name)") }
                    let before = lastTarget[name]
                    if change.previous?.status != before?.status || change.previous?.interfaceName != before?.interfaceName {
                        violations.append(
                            "#\(position): \(name) previous \(describe(change.previous)) but the last reported was \(describe(before))")
                    }
                    if change.previous?.status == change.target.status && change.previous?.interfaceName == change.target.interfaceName {
                        violations.append("#\(position): \(name) event with nothing visible changed: \(describe(change.target))")
                    }
                }
                if Visible(change.path) != lastPath {
                    violations.append(
                        "#\(position): \(name) carries path \(Visible(change.path)), the last reported was \(lastPath?.description ?? "-")")
                }
                lastTarget[name] = change.target
            }
        }
        return (violations, counts)
    }

    private static func describe(_ target: TargetReachability?) -> String {
        guard let target else { return "none" }
        return "\(target.status.rawValue) via \(target.interfaceName ?? "-")"
    }
}
