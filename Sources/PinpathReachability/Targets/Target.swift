/// Whether one watched target (a host name or an IP address) can be reached, and through which interface.
public struct TargetReachability: Sendable, Equatable {
    /// The target as it was given: a host name or a numeric address.
    public var target: String
    public var status: ReachabilityStatus
    /// The egress interface of the first reachable address.
    public var interfaceName: String?
    /// The address that was found reachable, or the first one tried.
    public var address: IPAddress?
    /// Why the target is not reachable; `nil` when it is.
    public var reason: UnreachableReason?

    public init(target: String, status: ReachabilityStatus, interfaceName: String?, address: IPAddress?, reason: UnreachableReason?) {
        self.target = target
        self.status = status
        self.interfaceName = interfaceName
        self.address = address
        self.reason = reason
    }

    static func reachable(_ target: String, via interfaceName: String, address: IPAddress) -> Self {
        Self(target: target, status: .reachable, interfaceName: interfaceName, address: address, reason: nil)
    }

    static func unreachable(_ target: String, _ reason: UnreachableReason, address: IPAddress? = nil) -> Self {
        Self(target: target, status: .notReachable, interfaceName: nil, address: address, reason: reason)
    }
}

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

/// A target to watch: a numeric address, or a host name to resolve.
public enum ReachabilityTarget: Sendable, Hashable, CustomStringConvertible {
    case address(IPAddress)
    case host(String)

    /// Parses what a user typed: an IPv4/IPv6 literal (brackets allowed) or a DNS host name (RFC 1123 labels).
    /// - Throws: `ReachabilityError` with code `.invalidTarget`, naming the input and what is wrong.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingWhitespace
        if let address = IPAddress(trimmed) {
            self = .address(address)
            return
        }
        if let problem = Self.hostNameProblem(trimmed) {
            throw ReachabilityError(.invalidTarget, "\"\(text)\" is not an IP address or host name: \(problem)")
        }
        self = .host(trimmed.hasSuffix(".") ? String(trimmed.dropLast()) : trimmed)
    }

    public var description: String {
        switch self {
        case .address(let address): return address.description
        case .host(let name): return name
        }
    }

    private static func hostNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.contains("://") { return "give a host, not a URL" }
        let body = name.hasSuffix(".") ? String(name.dropLast()) : name
        if body.utf8.count > 253 { return "it is longer than 253 characters" }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return "it has an empty label" }
            if label.utf8.count > 63 { return "the label \"\(label)\" is longer than 63 characters" }
            if label.first == "-" || label.last == "-" { return "the label \"\(label)\" starts or ends with '-'" }
            if let bad = label.unicodeScalars.first(where: { !($0.isASCIILetterOrDigit || $0 == "-" || $0 == "_") }) {
                return "it contains \"\(bad.escaped(asASCII: true))\""
            }
        }
        if body.split(separator: ".").last?.allSatisfy(\.isNumber) == true {
            return "it looks like an IP address but is not a valid one"
        }
        return nil
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetterOrDigit: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
