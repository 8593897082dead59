import Glibc

/// Turns the kernel's links, addresses and route answers into a `NetworkPath`. Pure: the route look-up is
/// passed in, so the rules can be tested without a kernel.
struct PathEvaluator {
    /// Well-known internet destinations whose route is "the default path" of each family. Only the route is
    /// asked for; no packet is sent. A look-up, unlike a scan of the main table, honours policy rules (wg-quick).
    static func internetProbe(_ family: IPFamily) -> IPAddress { family == .ipv4 ? ipv4Probe : ipv6Probe }
    private static let ipv4Probe = IPAddress("8.8.8.8")!
    private static let ipv6Probe = IPAddress("2001:4860:4860::8888")!
    /// The probes of every family, in `IPFamily.allCases` order: what each snapshot looks up first.
    private static let internetProbes = IPFamily.allCases.map(internetProbe)

    let state: KernelState
    let lookUpRoute: (IPAddress) -> RouteAnswer

    /// Every address whose route is needed: the internet probes (for a whole snapshot), then each target's
    /// addresses, once each.
    static func destinations(of targets: [WatchedTarget], includingProbes: Bool = true) -> [IPAddress] {
        var ordered = includingProbes ? internetProbes : []
        // Without targets (what `pinpath watch` has), every snapshot asks for the same probes: no set to build.
        guard !targets.isEmpty else { return ordered }
        var seen = Set(ordered)
        for target in targets {
            guard case .resolved(let addresses) = target.resolution else { continue }
            for address in addresses where seen.insert(address).inserted { ordered.append(address) }
        }
        return ordered
    }

    func path(targets: [WatchedTarget]) -> NetworkPath {
        let interfaces = state.interfaces()
        let ipv4 = familyPath(.ipv4)
        let ipv6 = familyPath(.ipv6)
        let primaryIndex = (ipv4 ?? ipv6)?.interfaceIndex
        return NetworkPath(
            status: ipv4 != nil || ipv6 != nil ? .reachable : .unreachable,
            primaryInterface: interfaces.first { $0.index == primaryIndex },
            ipv4: ipv4, ipv6: ipv6, interfaces: interfaces,
            targets: targets.map(reachability(of:)))
    }

    private func familyPath(_ family: IPFamily) -> FamilyPath? {
        guard case .reachable(let egress) = evaluate(PathEvaluator.internetProbe(family)) else { return nil }
        return egress
    }

    func reachability(of target: WatchedTarget) -> TargetReachability {
        let name = target.target.description
        let addresses: [IPAddress]
        switch target.resolution {
        case .failed: return .unreachable(name, .dnsFailed)
        case .resolved(let resolved): addresses = resolved
        }
        var firstFailure: (UnreachableReason, IPAddress)?
        for address in addresses {
            switch evaluate(address) {
            case .reachable(let egress): return .reachable(name, via: egress.interfaceName, address: address)
            case .unreachable(let reason): firstFailure = firstFailure ?? (reason, address)
            }
        }
        guard let firstFailure else { return .unreachable(name, .dnsFailed) }
        return .unreachable(name, firstFailure.0, address: firstFailure.1)
    }

    /// The kernel's route to `destination`, accepted only if it leaves through an interface that is up, has
    /// carrier, and offers a usable source address.
    func evaluate(_ destination: IPAddress) -> Egress {
        switch lookUpRoute(destination) {
        case .failed(let error):
            return .unreachable(Self.reason(forLookupError: error, family: destination.family))
        case .route(let type, let index, let gateway, let source, let table):
            if let reason = Self.reason(forRouteType: type) { return .unreachable(reason) }
            guard let index, let link = state.links[index] else { return .unreachable(.noRoute) }
            guard link.isAdminUp else { return .unreachable(.interfaceDown) }
            guard link.hasCarrier else { return .unreachable(.noCarrier) }
            guard hasUsableSource(source, egress: link, destination: destination) else {
                return .unreachable(.noSourceAddress)
            }
            return .reachable(
                FamilyPath(interfaceIndex: index, interfaceName: link.name, gateway: gateway, source: source, table: table))
        }
    }

    /// The kernel names a preferred source; it must be an address we may use (not tentative), and not a
    /// stand-in the kernel picks when nothing better exists: a loopback address (unless the egress is
    /// loopback) or a link-local one (unless the destination is link-local too). With only fe80:: left,
    /// for example while the global address is in DAD, IPv6 cannot reach beyond the link.
    private func hasUsableSource(_ source: IPAddress?, egress: LinkRecord, destination: IPAddress) -> Bool {
        let isLoopbackEgress = egress.kindFacts.hardwareType == HardwareType.loopback
        func acceptable(_ address: IPAddress) -> Bool {
            (isLoopbackEgress || !address.isLoopback) && (destination.isLinkLocal || !address.isLinkLocal)
        }
        if let source {
            return state.isUsableAddress(source) && acceptable(source)
        }
        return state.usableAddresses(of: egress.index).contains {
            $0.address.family == destination.family && acceptable($0.address)
        }
    }

    static func reason(forLookupError error: Int32, family: IPFamily) -> UnreachableReason {
        switch error {
        case ENETUNREACH: return .noRoute
        case EHOSTUNREACH: return .unreachableRoute
        case EACCES, EPERM: return .prohibitedRoute
        case EINVAL: return .blackholeRoute  // IPv4 and IPv6 both answer a blackhole route with EINVAL
        case EAFNOSUPPORT: return .addressFamilyUnavailable
        default: return .lookupFailed
        }
    }

    /// RTN_* types that a look-up may return instead of an error (IPv6 does for some).
    static func reason(forRouteType type: UInt8) -> UnreachableReason? {
        switch type {
        case 6: return .blackholeRoute  // RTN_BLACKHOLE
        case 7: return .unreachableRoute  // RTN_UNREACHABLE
        case 8: return .prohibitedRoute  // RTN_PROHIBIT
        case 9: return .noRoute  // RTN_THROW
        default: return nil
        }
    }
}

extension IPAddress {
    var isLoopback: Bool { self == IPAddress.loopback6 || (family == .ipv4 && bytes[0] == 127) }

    /// fe80::/10 or 169.254.0.0/16: usable on one link only.
    var isLinkLocal: Bool {
        let bytes = self.bytes
        return family == .ipv6 ? bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 : bytes[0] == 169 && bytes[1] == 254
    }
    private static let loopback6 = IPAddress("::1")!
}

/// Where a packet to one destination would go, or why it cannot.
enum Egress: Equatable {
    case reachable(FamilyPath)
    case unreachable(UnreachableReason)
}

/// A target the monitor watches, with the addresses its name resolved to.
struct WatchedTarget {
    enum Resolution: Equatable {
        case resolved([IPAddress])
        case failed
    }
    var target: ReachabilityTarget
    var resolution: Resolution
    /// The number of the look-up under way, if any; see `MonitorLoop.resolveHostTargets`.
    var pendingResolution: Int? = nil
}
