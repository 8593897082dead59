/// Why a destination cannot be reached. Raw values are the names used in JSON.
public enum UnreachableReason: String, Sendable, Equatable, Codable {
    /// The kernel has no route (ENETUNREACH).
    case noRoute = "no_route"
    /// A `blackhole` route drops it.
    case blackholeRoute = "blackhole_route"
    /// An `unreachable` route rejects it (EHOSTUNREACH).
    case unreachableRoute = "unreachable_route"
    /// A `prohibit` route rejects it (EACCES).
    case prohibitedRoute = "prohibited_route"
    /// The egress interface is administratively down.
    case interfaceDown = "interface_down"
    /// The egress interface has no carrier.
    case noCarrier = "no_carrier"
    /// The egress interface has no usable (non-tentative) address of the family.
    case noSourceAddress = "no_source_address"
    /// The host name did not resolve in time.
    case dnsFailed = "dns_failed"
    /// The target's address family has no path (an IPv6 literal on an IPv4-only host, say).
    case addressFamilyUnavailable = "address_family_unavailable"
    /// The kernel refused the route look-up for another reason.
    case lookupFailed = "lookup_failed"
}
