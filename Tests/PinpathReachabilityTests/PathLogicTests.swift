import Glibc
import Testing

@testable import PinpathReachability

/// The pure parts of the monitor: kernel state bookkeeping, the path rules, and which changes are visible.
/// The kernel's route answers are given as values here; the integration tests ask the real kernel.
@Suite("Path logic")
struct PathLogicTests {
    static let upFlags: UInt32 = 0x1 | 0x40 | 0x10000  // UP, RUNNING, LOWER_UP

    static func link(_ index: Int, _ name: String, flags: UInt32 = upFlags, state: OperationalState = .up, mtu: Int = 1500)
        -> LinkRecord
    {
        LinkRecord(
            index: index, name: name, flags: flags, operationalState: state, mtu: mtu, lowerIndex: nil, masterIndex: nil,
            kindFacts: LinkKindFacts(infoKind: nil, hardwareType: HardwareType.ether, deviceType: nil, hasWirelessPhy: false))
    }

    static func address(_ index: Int, _ text: String, _ prefix: Int, flags: UInt32 = 0) -> AddressRecord {
        AddressRecord(key: .init(interfaceIndex: index, address: IPAddress(text)!, prefixLength: prefix), flags: flags)
    }

    static let gateway = IPAddress("10.0.0.254")!
    static let source = IPAddress("10.0.0.1")!

    /// eth0 with 10.0.0.1/24 and an IPv6 address, and routes for both families through it.
    static func healthy() -> KernelState {
        KernelState(
            links: [link(1, "lo", state: .unknown), link(2, "eth0")],
            addresses: [address(2, "10.0.0.1", 24), address(2, "2001:db8::1", 64)])
    }

    static func routes(ipv6: RouteAnswer? = nil) -> (IPAddress) -> RouteAnswer {
        { destination in
            destination.family == .ipv4
                ? .route(type: 1, interfaceIndex: 2, gateway: gateway, source: source, table: 254)
                : ipv6 ?? .route(type: 1, interfaceIndex: 2, gateway: nil, source: IPAddress("2001:db8::1"), table: 254)
        }
    }

    @Test("A default route through an interface with carrier and a usable source is reachable")
    func reachable() {
        let path = PathEvaluator(state: Self.healthy(), lookUpRoute: Self.routes()).path(targets: [])
        #expect(path.status == .reachable)
        #expect(path.primaryInterface?.name == "eth0")
        #expect(path.primaryInterface?.kind == .wired)
        #expect(path.ipv4?.gateway == Self.gateway && path.ipv6 != nil)
        #expect(path.gateways == [Self.gateway])
    }

    @Test(
        "Kernel refusals map to reasons",
        arguments: [
            (ENETUNREACH, UnreachableReason.noRoute), (EHOSTUNREACH, .unreachableRoute), (EACCES, .prohibitedRoute),
            (EINVAL, .blackholeRoute), (EIO, .lookupFailed),
        ])
    func refusals(errno: Int32, reason: UnreachableReason) {
        let evaluator = PathEvaluator(state: Self.healthy(), lookUpRoute: { _ in .failed(errno: errno) })
        #expect(evaluator.evaluate(IPAddress("192.0.2.1")!) == .unreachable(reason))
        #expect(evaluator.path(targets: []).status == .unreachable)
    }

    @Test("Routes of type blackhole, unreachable and prohibit are not paths")
    func rejectingRouteTypes() {
        for (type, reason) in [(UInt8(6), UnreachableReason.blackholeRoute), (7, .unreachableRoute), (8, .prohibitedRoute)] {
            let evaluator = PathEvaluator(
                state: Self.healthy(),
                lookUpRoute: { _ in .route(type: type, interfaceIndex: 1, gateway: nil, source: nil, table: 254) })
            #expect(evaluator.evaluate(IPAddress("2001:db8:1::1")!) == .unreachable(reason))
        }
    }

    @Test("The egress must be up, have carrier, and offer a usable source address")
    func egressChecks() {
        var state = Self.healthy()
        _ = state.apply(link: Self.link(2, "eth0", flags: 0x1, state: .lowerLayerDown))
        #expect(PathEvaluator(state: state, lookUpRoute: Self.routes()).evaluate(Self.gateway) == .unreachable(.noCarrier))

        _ = state.apply(link: Self.link(2, "eth0", flags: 0, state: .down))
        #expect(PathEvaluator(state: state, lookUpRoute: Self.routes()).evaluate(Self.gateway) == .unreachable(.interfaceDown))

        // IPv6 source still in duplicate address detection (IFA_F_TENTATIVE): not usable.
        var tentative = Self.healthy()
        _ = tentative.apply(address: Self.address(2, "2001:db8::1", 64, flags: 0x40))
        let path = PathEvaluator(state: tentative, lookUpRoute: Self.routes()).path(targets: [])
        #expect(path.ipv6 == nil && path.ipv4 != nil)
        #expect(path.interfaces[1].addresses.map(\.description) == ["10.0.0.1/24"])

        // The kernel offering ::1 as the source of an off-host route means it has nothing better.
        let loopbackSource = Self.routes(ipv6: .route(type: 1, interfaceIndex: 2, gateway: nil, source: IPAddress("::1"), table: 254))
        var withLoopback = Self.healthy()
        _ = withLoopback.apply(address: Self.address(1, "::1", 128))
        #expect(PathEvaluator(state: withLoopback, lookUpRoute: loopbackSource).path(targets: []).ipv6 == nil)
    }

    @Test("A link-local source reaches only its link")
    func linkLocalSource() {
        var state = Self.healthy()
        _ = state.removeAddress(.init(interfaceIndex: 2, address: IPAddress("2001:db8::1")!, prefixLength: 64))
        _ = state.apply(address: Self.address(2, "fe80::1", 64))
        let viaLinkLocal = Self.routes(ipv6: .route(type: 1, interfaceIndex: 2, gateway: nil, source: IPAddress("fe80::1"), table: 254))
        let evaluator = PathEvaluator(state: state, lookUpRoute: viaLinkLocal)
        #expect(evaluator.path(targets: []).ipv6 == nil)
        #expect(evaluator.evaluate(IPAddress("2001:db8:9::1")!) == .unreachable(.noSourceAddress))
        #expect(evaluator.evaluate(IPAddress("fe80::2")!) != .unreachable(.noSourceAddress), "a neighbour on the link is fine")
        let noPreferredSource = Self.routes(ipv6: .route(type: 1, interfaceIndex: 2, gateway: nil, source: nil, table: 254))
        #expect(PathEvaluator(state: state, lookUpRoute: noPreferredSource).path(targets: []).ipv6 == nil)
    }

    @Test("Targets: first reachable address wins; DNS failure is its own reason")
    func targets() {
        let v6Down = Self.routes(ipv6: .failed(errno: ENETUNREACH))
        let evaluator = PathEvaluator(state: Self.healthy(), lookUpRoute: v6Down)
        let dual = WatchedTarget(
            target: .host("dual.example"), resolution: .resolved([IPAddress("2001:db8:9::1")!, IPAddress("192.0.2.9")!]))
        let result = evaluator.reachability(of: dual)
        #expect(result.status == .reachable && result.interfaceName == "eth0" && result.address == IPAddress("192.0.2.9"))

        let v6Only = WatchedTarget(target: .host("v6.example"), resolution: .resolved([IPAddress("2001:db8:9::1")!]))
        #expect(evaluator.reachability(of: v6Only).reason == .noRoute)
        #expect(evaluator.reachability(of: WatchedTarget(target: .host("x.invalid"), resolution: .failed)).reason == .dnsFailed)
    }

    @Test("Link and address messages are classified, and repeats are not changes")
    func stateBookkeeping() {
        var state = Self.healthy()
        #expect(state.apply(link: Self.link(2, "eth0")) == nil)
        #expect(state.apply(link: Self.link(2, "eth0", mtu: 9000)) == nil)
        #expect(state.apply(link: Self.link(2, "eth0", state: .lowerLayerDown)) == .carrierLost)
        #expect(state.apply(link: Self.link(2, "eth0")) == .carrierGained)
        #expect(state.apply(link: Self.link(2, "eth0", flags: 0, state: .down)) == .linkDown)
        #expect(state.apply(link: Self.link(2, "eth0")) == .linkUp)
        #expect(state.apply(link: Self.link(3, "wlan0")) == .linkAdded)
        #expect(state.apply(address: Self.address(3, "192.168.1.2", 24)) == .addressAdded)
        #expect(state.apply(address: Self.address(3, "192.168.1.2", 24)) == nil)
        #expect(state.removeLink(index: 3) == .linkRemoved)
        #expect(state.usableAddresses(of: 3).isEmpty, "a removed link's addresses go with it")
        #expect(state.removeLink(index: 3) == nil)
        #expect(state.removeAddress(.init(interfaceIndex: 2, address: Self.source, prefixLength: 24)) == .addressRemoved)
    }

    @Test("Only what a user sees produces events: status, primary interface and kind, families, targets")
    func visibility() {
        let before = PathEvaluator(state: Self.healthy(), lookUpRoute: Self.routes()).path(targets: [])
        var mtuOnly = Self.healthy()
        _ = mtuOnly.apply(link: Self.link(2, "eth0", mtu: 9000))
        let after = PathEvaluator(state: mtuOnly, lookUpRoute: Self.routes()).path(targets: [])
        #expect(before != after)
        #expect(visibleChanges(from: before, to: after, reason: { _ in .linkChanged }).isEmpty)

        let ipv6Lost = PathEvaluator(state: Self.healthy(), lookUpRoute: Self.routes(ipv6: .failed(errno: ENETUNREACH)))
            .path(targets: [])
        let changes = visibleChanges(from: before, to: ipv6Lost, reason: { _ in .routeRemoved })
        #expect(changes.count == 1)
        guard case .path(let change) = changes.first else { return }
        #expect(change.reason == .routeRemoved && change.previous?.ipv6 != nil && change.path.ipv6 == nil)
        #expect(change.path.status == .reachable)
    }

    @Test("The reason given is the weightiest trigger on an interface the change involved")
    func reasons() {
        let triggers = [
            Trigger(reason: .routeRemoved, interfaceName: "eth0"),
            Trigger(reason: .linkUp, interfaceName: "wlan0"),
            Trigger(reason: .carrierLost, interfaceName: "eth0"),
            Trigger(reason: .addressRemoved, interfaceName: "eth0"),
        ]
        #expect(Trigger.explaining(["eth0"], from: triggers) == .carrierLost)
        #expect(Trigger.explaining(["wlan0"], from: triggers) == .linkUp)
        #expect(Trigger.explaining(["tun0"], from: triggers) == .linkUp, "unrelated: the earliest of the weightiest")
        #expect(Trigger.explaining(["eth0"], from: [Trigger(reason: .ruleChanged, interfaceName: nil)]) == .ruleChanged)
        #expect(Trigger.explaining(["eth0"], from: []) == .linkChanged)
    }
}
