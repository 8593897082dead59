import PinpathSupport

/// The JSON shapes of reachability data, beside the types they encode: `pinpath status --json` prints a
/// ``NetworkPath/snapshotJSON``, and the agent's `reachability.*` events (which `pinpath watch --json` writes too)
/// carry a change's ``ReachabilityEvent/jsonFields`` and a ``NetworkPath/summaryJSON``.
extension NetworkPath {
    /// One of a path's own fields, written the same way in every shape that carries it; each shape names the
    /// ones it carries, in its order.
    public enum JSONField: String, Sendable {
        case status, interface, kind, expensive, ipv4, ipv6, gateways
    }

    /// The path in brief, as `agent.started` carries it: `status`, `interface`, `kind`, `ipv4`, `ipv6`.
    public var summaryJSON: JSONValue {
        .object(jsonMembers([.status, .interface, .kind, .ipv4, .ipv6]))
    }

    /// The whole snapshot, as `pinpath status --json` prints it: the path's fields, then its routes, its
    /// interfaces and its targets.
    public var snapshotJSON: JSONValue {
        .object(
            jsonMembers([.status, .interface, .kind, .expensive, .ipv4, .ipv6, .gateways]) + [
                ("routes", .array(IPFamily.allCases.compactMap { family in path(for: family).map { $0.json(family: family) } })),
                ("interfaces", .array(interfaces.map(\.json))),
                ("targets", .array(targets.map(\.json))),
            ])
    }

    /// The named fields as object members, in the order given.
    public func jsonMembers(_ fields: [JSONField]) -> [(String, JSONValue)] {
        fields.map(jsonMember)
    }

    /// One field as an object member: its name and its value.
    public func jsonMember(_ field: JSONField) -> (String, JSONValue) { (field.rawValue, jsonValue(of: field)) }

    private func jsonValue(of field: JSONField) -> JSONValue {
        switch field {
        case .status: .string(status.rawValue)
        case .interface: .string(primaryInterface?.name)
        case .kind: .string(primaryInterface?.kind.rawValue)
        case .expensive: .bool(isExpensive)
        case .ipv4: .bool(ipv4 != nil)
        case .ipv6: .bool(ipv6 != nil)
        case .gateways: .array(gateways.map { .string($0.description) })
        }
    }
}

extension ReachabilityEvent {
    /// The fields of the event reporting this change (everything after the envelope): `reachability.changed`'s
    /// for a path, `reachability.target_changed`'s for a target.
    public var jsonFields: [(String, JSONValue)] {
        switch self {
        case .path(let change):
            let path = change.path
            // One array literal: `pinpath watch` builds this for every change.
            return [
                path.jsonMember(.status), ("previous_status", .string(change.previous?.status.rawValue)),
                path.jsonMember(.interface), path.jsonMember(.kind), ("reason", .string(change.reason.rawValue)),
                path.jsonMember(.ipv4), path.jsonMember(.ipv6), path.jsonMember(.expensive), path.jsonMember(.gateways),
            ]
        case .target(let change):
            return [
                ("target", .string(change.target.target)),
                ("status", .string(change.target.status.rawValue)),
                ("previous_status", .string(change.previous?.status.rawValue)),
                ("interface", .string(change.target.interfaceName)),
                ("reason", .string(change.reason.rawValue)),
                ("detail", .string(change.target.reason?.rawValue)),
                ("address", .string(change.target.address?.description)),
            ]
        }
    }

    /// Whether the path or the target it reports is reachable after the change.
    public var isReachable: Bool {
        switch self {
        case .path(let change): change.path.status == .reachable
        case .target(let change): change.target.status == .reachable
        }
    }
}

extension FamilyPath {
    /// One route of `pinpath status --json`'s `routes`.
    func json(family: IPFamily) -> JSONValue {
        .object([
            ("family", .string(family.rawValue)),
            ("interface", .string(interfaceName)),
            ("gateway", .string(gateway?.description)),
            ("source", .string(source?.description)),
            ("table", .int(Int(table))),
        ])
    }
}

extension NetworkInterface {
    /// One interface of `pinpath status --json`'s `interfaces`.
    var json: JSONValue {
        .object([
            ("index", .int(index)),
            ("name", .string(name)),
            ("kind", .string(kind.rawValue)),
            ("admin_up", .bool(isAdminUp)),
            ("carrier", .bool(hasCarrier)),
            ("operstate", .string(operationalState.rawValue)),
            ("mtu", .int(mtu)),
            ("addresses", .array(addresses.map { .string($0.description) })),
        ])
    }
}

extension TargetReachability {
    /// A target's state in `pinpath status --json`'s `targets`: `target`, `status`, `interface`, `reason`, `address`.
    var json: JSONValue {
        .object([
            ("target", .string(target)),
            ("status", .string(status.rawValue)),
            ("interface", .string(interfaceName)),
            ("reason", .string(reason?.rawValue)),
            ("address", .string(address?.description)),
        ])
    }
}
