import Foundation
import PinpathReachability
import PinpathTestSupport

/// What the kernel of one namespace says, read with `ip -j` and `ip route get`, put in the terms of a
/// `NetworkPath` so that a monitor's snapshot can be compared with it field by field. It is the test's own
/// oracle: it reads the kernel through iproute2, not through the monitor's netlink code.
struct KernelView {
    struct Link: Equatable, CustomStringConvertible {
        var index: Int
        var name: String
        var adminUp: Bool
        var carrier: Bool
        var operstate: String
        var mtu: Int
        /// Usable addresses (tentative and DAD-failed ones left out), as "address/prefix".
        var addresses: Set<String>

        var description: String {
            "\(index) \(name) \(adminUp ? "up" : "down") carrier=\(carrier) \(operstate) mtu=\(mtu) \(addresses.sorted())"
        }
    }

    /// The kernel's answer to `ip route get DESTINATION`.
    enum Route: Equatable {
        case route(device: String, gateway: String?, source: String?, table: Int)
        case rejected(UnreachableReason)
    }

    /// What a monitor must say about one destination, derived from the kernel's facts by the rules
    /// `NetworkPath` documents: a route through an interface that is up, has carrier and a usable source.
    enum Verdict: Equatable, CustomStringConvertible {
        case reachable(device: String, gateway: String?, source: String?, table: Int)
        case unreachable(UnreachableReason)

        var description: String {
            switch self {
            case .reachable(let device, let gateway, let source, let table):
                return "reachable via \(device) gw \(gateway ?? "-") src \(source ?? "-") table \(table)"
            case .unreachable(let reason): return "unreachable (\(reason.rawValue))"
            }
        }
    }

    static let internetProbes = ["8.8.8.8", "2001:4860:4860::8888"]

    var links: [Link]
    var routes: [String: Route]

    /// Reads links, addresses and the route to each of `destinations` (and the monitor's internet probes).
    init(namespace: String, destinations: [String]) throws {
        let addressLists = try Self.json(namespace, ["addr", "show"])
        var addresses: [Int: Set<String>] = [:]
        for entry in addressLists {
            guard let index = entry["ifindex"] as? Int else { continue }
            let info = entry["addr_info"] as? [[String: Any]] ?? []
            addresses[index] = Set(
                info.compactMap { address in
                    guard let local = address["local"] as? String, let prefix = address["prefixlen"] as? Int,
                        address["tentative"] == nil, address["dadfailed"] == nil
                    else { return nil }
                    return "\(local)/\(prefix)"
                })
        }
        links = try Self.json(namespace, ["link", "show"]).map { link in
            let flags = link["flags"] as? [String] ?? []
            let operstate = link["operstate"] as? String ?? "?"
            let index = link["ifindex"] as? Int ?? -1
            return Link(
                index: index, name: link["ifname"] as? String ?? "?", adminUp: flags.contains("UP"),
                carrier: operstate == "UP" || (operstate == "UNKNOWN" && flags.contains("LOWER_UP") && !flags.contains("DORMANT")),
                operstate: operstate, mtu: link["mtu"] as? Int ?? 0, addresses: addresses[index] ?? [])
        }.sorted { $0.index < $1.index }
        routes = [:]
        for destination in Self.internetProbes + destinations where routes[destination] == nil {
            routes[destination] = try Self.route(namespace, to: destination)
        }
    }

    /// The kernel's verdict for `destination` (which must have been passed to `init`).
    func verdict(_ destination: String) -> Verdict {
        switch routes[destination] {
        case nil:
            return .unreachable(.lookupFailed)
        case .rejected(let reason):
            return .unreachable(reason)
        case .route(let device, let gateway, let source, let table):
            guard let link = links.first(where: { $0.name == device }) else { return .unreachable(.noRoute) }
            guard link.adminUp else { return .unreachable(.interfaceDown) }
            guard link.carrier else { return .unreachable(.noCarrier) }
            let isIPv6 = destination.contains(":")
            func acceptable(_ address: String) -> Bool {
                let loopback = address.hasPrefix("127.") || address == "::1"
                let linkLocal = address.hasPrefix("fe80:") || address.hasPrefix("169.254.")
                return (link.name == "lo" || !loopback) && !linkLocal
            }
            let usable: Bool
            if let source {
                usable = acceptable(source) && links.contains { $0.addresses.contains { $0.hasPrefix("\(source)/") } }
            } else {
                usable = link.addresses.contains { $0.contains(":") == isIPv6 && acceptable(String($0.prefix { $0 != "/" })) }
            }
            guard usable else { return .unreachable(.noSourceAddress) }
            return .reachable(device: device, gateway: gateway, source: source, table: table)
        }
    }

    /// The interface internet traffic leaves by: IPv4's if it has a usable default path, else IPv6's.
    var primaryInterface: String? {
        Self.internetProbes.lazy.compactMap { probe -> String? in
            if case .reachable(let device, _, _, _) = self.verdict(probe) { return device } else { return nil }
        }.first
    }

    /// The path as the agent's events put it: "reachable via pa0", "unreachable via -".
    var pathSummary: String {
        primaryInterface.map { "reachable via \($0)" } ?? "unreachable via -"
    }

    /// Every way `path` differs from the kernel: links and their addresses, the per-family default paths,
    /// the overall status and primary interface, and each target. Empty when they agree.
    func differences(from path: NetworkPath) -> [String] {
        var differences: [String] = []
        let monitorLinks = path.interfaces.map {
            Link(
                index: $0.index, name: $0.name, adminUp: $0.isAdminUp, carrier: $0.hasCarrier,
                operstate: $0.operationalState.rawValue, mtu: $0.mtu, addresses: Set($0.addresses.map(\.description)))
        }
        if monitorLinks != links {
            differences.append("links: monitor \(monitorLinks), kernel \(links)")
        }
        for (name, familyPath, probe) in [("ipv4", path.ipv4, Self.internetProbes[0]), ("ipv6", path.ipv6, Self.internetProbes[1])] {
            let expected = verdict(probe)
            let seen = familyPath.map {
                Verdict.reachable(
                    device: $0.interfaceName, gateway: $0.gateway?.description, source: $0.source?.description, table: Int($0.table))
            }
            switch expected {
            case .reachable:
                if seen != expected { differences.append("\(name): monitor \(seen?.description ?? "none"), kernel \(expected)") }
            case .unreachable: if seen != nil { differences.append("\(name): monitor \(seen!), kernel \(expected)") }
            }
        }
        let expectedPrimary = primaryInterface
        if path.primaryInterface?.name != expectedPrimary || (path.status == .reachable) != (expectedPrimary != nil) {
            differences.append(
                "status: monitor \(path.status) via \(path.primaryInterface?.name ?? "-"), kernel via \(expectedPrimary ?? "-")")
        }
        for target in path.targets {
            let expected = verdict(target.target)
            let seen: Verdict? =
                target.status == .reachable
                ? target.interfaceName.map { .reachable(device: $0, gateway: nil, source: nil, table: 0) }
                : target.reason.map { .unreachable($0) }
            let agrees: Bool
            switch (expected, seen) {
            case (.reachable(let device, _, _, _), .reachable(let seenDevice, _, _, _)?): agrees = device == seenDevice
            default: agrees = expected == seen
            }
            if !agrees { differences.append("target \(target.target): monitor \(seen?.description ?? "?"), kernel \(expected)") }
        }
        return differences
    }

    private static func json(_ namespace: String, _ arguments: [String]) throws -> [[String: Any]] {
        let output = try Shell.check(["ip", "-n", namespace, "-j"] + arguments)
        return try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]] ?? []
    }

    /// `ip route get`: a route, or the kernel's refusal mapped as the monitor maps the same errno.
    private static func route(_ namespace: String, to destination: String) throws -> Route {
        let result = try Shell.run(["ip", "-n", namespace, "-j", "route", "get", destination])
        guard result.status == 0 else {
            let refusals: [(String, UnreachableReason)] = [
                ("Network is unreachable", .noRoute), ("No route to host", .unreachableRoute),
                ("Permission denied", .prohibitedRoute), ("Invalid argument", .blackholeRoute),
            ]
            guard let reason = refusals.first(where: { result.stderr.contains($0.0) })?.1 else {
                throw ShellError(description: "ip route get \(destination) in \(namespace): \(result.stderr)")
            }
            return .rejected(reason)
        }
        let entry = (try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])?.first ?? [:]
        let types: [String: UnreachableReason] = [
            "blackhole": .blackholeRoute, "unreachable": .unreachableRoute, "prohibit": .prohibitedRoute, "throw": .noRoute,
        ]
        if let type = entry["type"] as? String, let reason = types[type] { return .rejected(reason) }
        let tables = ["main": 254, "local": 255, "default": 253]
        let table = (entry["table"] as? String).flatMap { tables[$0] ?? Int($0) } ?? (entry["table"] as? Int) ?? 254
        return .route(
            device: entry["dev"] as? String ?? "?", gateway: entry["gateway"] as? String, source: entry["prefsrc"] as? String,
            table: table)
    }
}
