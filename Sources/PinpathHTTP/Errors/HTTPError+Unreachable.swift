import PinpathReachability

extension HTTPError {
    /// The most skipped addresses a message names; a name may resolve to dozens.
    static let maximumNamedAddresses = 4

    /// The error for a request whose every resolved address the reachability gate skipped before connecting
    /// (`no resolved address is reachable (2001:db8::1: no_route, 192.0.2.1: blackhole_route)`), with the first
    /// verdict; `nil` when none was skipped. libcurl's transfers and the handshake engine's checks both say so.
    static func noAddressReachable(_ skipped: [TargetReachability], request: String) -> HTTPError? {
        guard let first = skipped.first else { return nil }
        return HTTPError(.unreachable, "\(request): no resolved address is reachable (\(skippedList(skipped)))", reachability: first)
    }

    /// `2001:db8::1: no_route, 192.0.2.1: blackhole_route`: each address once, with the kernel's reason, and how
    /// many more when there are too many to name.
    static func skippedList(_ skipped: [TargetReachability]) -> String {
        var seen = Set<String>()
        let named = skipped.compactMap { verdict -> String? in
            let address = verdict.address.map { "\($0)" } ?? "?"
            guard seen.insert(address).inserted else { return nil }
            return "\(address): \(verdict.reason?.rawValue ?? "unreachable")"
        }
        let more = named.count - maximumNamedAddresses
        return named.prefix(maximumNamedAddresses).joined(separator: ", ") + (more > 0 ? " and \(more) more" : "")
    }
}
