import PinpathReachability

/// The JSON shapes of reachability data: `pinpath status --json`, and the `reachability.*` events that
/// `pinpath watch --json` and the agent write.
public enum ReachabilityJSON {
    /// Event type names.
    public static let pathChanged = EventCatalog.reachabilityChanged.name
    public static let targetChanged = EventCatalog.reachabilityTargetChanged.name

    /// The event name, level and fields (everything after the envelope) for one change: `warning` when the
    /// path or the target is no longer reachable, `info` otherwise.
    public static func event(_ event: ReachabilityEvent) -> (name: String, level: EventLevel, fields: [(String, JSONValue)]) {
        let built = agentEvent(event)
        return (built.name, built.level, built.fields)
    }

    static func agentEvent(_ event: ReachabilityEvent) -> AgentEvent {
        switch event {
        case .path(let change):
            let path = change.path
            // One array literal: `pinpath watch` builds this for every change.
            return AgentEvent(
                EventCatalog.reachabilityChanged,
                [
                    PathField.status.member(of: path),
                    ("previous_status", .string(change.previous?.status.rawValue)),
                    PathField.interface.member(of: path), PathField.kind.member(of: path),
                    ("reason", .string(change.reason.rawValue)),
                    PathField.ipv4.member(of: path), PathField.ipv6.member(of: path),
                    PathField.expensive.member(of: path), PathField.gateways.member(of: path),
                ],
                level: path.status == .reachable ? .info : .warning
            )
        case .target(let change):
            return AgentEvent(
                EventCatalog.reachabilityTargetChanged,
                [
                    ("target", .string(change.target.target)),
                    ("status", .string(change.target.status.rawValue)),
                    ("previous_status", .string(change.previous?.status.rawValue)),
                    ("interface", .string(change.target.interfaceName)),
                    ("reason", .string(change.reason.rawValue)),
                    ("detail", .string(change.target.reason?.rawValue)),
                    ("address", .string(change.target.address?.description)),
                ],
                level: change.target.status == .reachable ? .info : .warning
            )
        }
    }

    /// The path in brief, as `agent.started` carries it: `status`, `interface`, `kind`, `ipv4`, `ipv6`.
    public static func summary(_ path: NetworkPath) -> JSONValue {
        .object(fields(of: path, [.status, .interface, .kind, .ipv4, .ipv6]))
    }

    /// The whole snapshot, as `pinpath status --json` prints it.
    public static func snapshot(_ path: NetworkPath) -> JSONValue {
        .object(
            fields(of: path, [.status, .interface, .kind, .expensive, .ipv4, .ipv6, .gateways]) + [
                ("routes", .array(IPFamily.allCases.compactMap { family in path.path(for: family).map { route(family, $0) } })),
                ("interfaces", .array(path.interfaces.map(interface))),
                ("targets", .array(path.targets.map(target))),
            ])
    }

    /// A path's own fields, written the same way in every shape that carries them; each shape names the
    /// ones it carries, in its order.
    enum PathField: String {
        case status, interface, kind, expensive, ipv4, ipv6, gateways

        func value(in path: NetworkPath) -> JSONValue {
            switch self {
            case .status: .string(path.status.rawValue)
            case .interface: .string(path.primaryInterface?.name)
            case .kind: .string(path.primaryInterface?.kind.rawValue)
            case .expensive: .bool(path.isExpensive)
            case .ipv4: .bool(path.ipv4 != nil)
            case .ipv6: .bool(path.ipv6 != nil)
            case .gateways: .array(path.gateways.map { .string($0.description) })
            }
        }

        /// The field as an object member: its name and its value in `path`.
        func member(of path: NetworkPath) -> (String, JSONValue) { (rawValue, value(in: path)) }
    }

    static func fields(of path: NetworkPath, _ names: [PathField]) -> [(String, JSONValue)] {
        names.map { $0.member(of: path) }
    }

    static func route(_ family: IPFamily, _ route: FamilyPath) -> JSONValue {
        .object([
            ("family", .string(family.rawValue)),
            ("interface", .string(route.interfaceName)),
            ("gateway", .string(route.gateway?.description)),
            ("source", .string(route.source?.description)),
            ("table", .int(Int(route.table))),
        ])
    }

    static func interface(_ interface: NetworkInterface) -> JSONValue {
        .object([
            ("index", .int(interface.index)),
            ("name", .string(interface.name)),
            ("kind", .string(interface.kind.rawValue)),
            ("admin_up", .bool(interface.isAdminUp)),
            ("carrier", .bool(interface.hasCarrier)),
            ("operstate", .string(interface.operationalState.rawValue)),
            ("mtu", .int(interface.mtu)),
            ("addresses", .array(interface.addresses.map { .string($0.description) })),
        ])
    }

    public static func target(_ target: TargetReachability) -> JSONValue {
        .object([
            ("target", .string(target.target)),
            ("status", .string(target.status.rawValue)),
            ("interface", .string(target.interfaceName)),
            ("reason", .string(target.reason?.rawValue)),
            ("address", .string(target.address?.description)),
        ])
    }
}
