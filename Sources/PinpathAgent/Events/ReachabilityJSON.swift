import PinpathReachability

/// The JSON shapes of reachability data: `pinpath status --json`, and the `reachability.*` events that
/// `pinpath watch --json` and the agent write.
public enum ReachabilityJSON {
    /// Event type names.
    public static let pathChanged = "reachability.changed"
    public static let targetChanged = "reachability.target_changed"

    /// The event name and fields (everything after the envelope) for one change.
    public static func event(_ event: ReachabilityEvent) -> (name: String, fields: [(String, JSONValue)]) {
        switch event {
        case .path(let change):
            let path = change.path
            return (
                pathChanged,
                [
                    ("status", .string(path.status.rawValue)),
                    ("previous_status", .string(change.previous?.status.rawValue)),
                    ("interface", .string(path.primaryInterface?.name)),
                    ("kind", .string(path.primaryInterface?.kind.rawValue)),
                    ("reason", .string(change.reason.rawValue)),
                    ("ipv4", .bool(path.ipv4 != nil)),
                    ("ipv6", .bool(path.ipv6 != nil)),
                    ("expensive", .bool(path.isExpensive)),
                    ("gateways", .array(path.gateways.map { .string($0.description) })),
                ]
            )
        case .target(let change):
            return (
                targetChanged,
                [
                    ("target", .string(change.target.target)),
                    ("status", .string(change.target.status.rawValue)),
                    ("previous_status", .string(change.previous?.status.rawValue)),
                    ("interface", .string(change.target.interfaceName)),
                    ("reason", .string(change.reason.rawValue)),
                    ("detail", .string(change.target.reason?.rawValue)),
                    ("address", .string(change.target.address?.description)),
                ]
            )
        }
    }

    /// The whole snapshot, as `pinpath status --json` prints it.
    public static func snapshot(_ path: NetworkPath) -> JSONValue {
        .object([
            ("status", .string(path.status.rawValue)),
            ("interface", .string(path.primaryInterface?.name)),
            ("kind", .string(path.primaryInterface?.kind.rawValue)),
            ("expensive", .bool(path.isExpensive)),
            ("ipv4", .bool(path.ipv4 != nil)),
            ("ipv6", .bool(path.ipv6 != nil)),
            ("gateways", .array(path.gateways.map { .string($0.description) })),
            ("routes", .array(IPFamily.allCases.compactMap { family in path.path(for: family).map { route(family, $0) } })),
            ("interfaces", .array(path.interfaces.map(interface))),
            ("targets", .array(path.targets.map(target))),
        ])
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
