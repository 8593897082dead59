import PinpathAgent
import PinpathReachability
import PinpathSupport

/// Human-readable renderings for the terminal. Every line goes through `UntrustedText`: interface names are the
/// kernel's (whoever may create an interface names it, escape sequences included) and targets are typed by a user.
enum PathText {
    static func snapshot(_ path: NetworkPath) -> String {
        var lines = ["status:     \(summary(path))"]
        for family in IPFamily.allCases {
            let label = family.rawValue.padding(12)
            if let route = path.path(for: family) {
                let via = route.gateway.map { "via \($0) " } ?? ""
                let source = route.source.map { ", source \($0)" } ?? ""
                lines.append("\(label)yes, \(via)dev \(route.interfaceName) (table \(route.table)\(source))")
            } else {
                lines.append("\(label)no")
            }
        }
        lines.append("interfaces:")
        let width = path.interfaces.map(\.name.count).max() ?? 0
        for interface in path.interfaces {
            let state = [
                interface.isAdminUp ? "up" : "down", interface.hasCarrier ? "carrier" : "no-carrier",
                interface.operationalState.rawValue, "mtu \(interface.mtu)",
            ].joined(separator: " ")
            let addresses = interface.addresses.map(\.description).joined(separator: " ")
            let line =
                "  \(String(interface.index).padding(3))\(interface.name.padding(width + 2))"
                + "\(interface.kind.rawValue.padding(10))\(state)"
            lines.append(addresses.isEmpty ? line : "\(line)  \(addresses)")
        }
        if !path.targets.isEmpty {
            lines.append("targets:")
            for target in path.targets { lines.append("  \(targetLine(target))") }
        }
        return UntrustedText.escapedLines(lines)
    }

    static func change(_ event: ReachabilityEvent) -> String {
        switch event {
        case .path(let change):
            let families = "ipv4 \(change.path.ipv4 != nil ? "yes" : "no"), ipv6 \(change.path.ipv6 != nil ? "yes" : "no")"
            return UntrustedText.escapedLines(["\(UTCTime.now()) \(summary(change.path)); \(families) [\(change.reason.rawValue)]"])
        case .target(let change):
            return UntrustedText.escapedLines(["\(UTCTime.now()) target \(targetLine(change.target)) [\(change.reason.rawValue)]"])
        }
    }

    private static func summary(_ path: NetworkPath) -> String {
        guard path.status == .reachable, let primary = path.primaryInterface else { return path.status.rawValue }
        return "reachable via \(primary.name) (\(primary.kind.rawValue)\(path.isExpensive ? ", expensive" : ""))"
    }

    private static func targetLine(_ target: TargetReachability) -> String {
        let address = target.address.map { $0.description == target.target ? "" : " [\($0)]" } ?? ""
        if target.status == .reachable { return "\(target.target)\(address): reachable via \(target.interfaceName ?? "?")" }
        return "\(target.target)\(address): unreachable (\(target.reason?.rawValue ?? "unknown"))"
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
