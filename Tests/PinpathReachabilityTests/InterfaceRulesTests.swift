import Testing

@testable import PinpathReachability

@Suite("Carrier and interface kind rules")
struct InterfaceRulesTests {
    static let up: UInt32 = 0x1, running: UInt32 = 0x40, lowerUp: UInt32 = 0x10000, dormant: UInt32 = 0x20000

    @Test(
        "systemd's carrier rule",
        arguments: [
            (OperationalState.up, UInt32(0), true),
            (.unknown, up | lowerUp | running, true),  // lo, tun, wireguard report UNKNOWN
            (.unknown, up | lowerUp, false),
            (.unknown, up | running, false),
            (.unknown, up | lowerUp | running | dormant, false),
            (.lowerLayerDown, up | lowerUp | running, false),
            (.down, up, false),
            (.dormant, up | lowerUp | running, false),
        ])
    func carrier(state: OperationalState, flags: UInt32, expected: Bool) {
        #expect(hasCarrier(operationalState: state, flags: flags) == expected)
    }

    private static func facts(_ infoKind: String?, _ hardware: UInt32 = HardwareType.ether, devtype: String? = nil, phy: Bool = false)
        -> LinkKindFacts
    {
        LinkKindFacts(infoKind: infoKind, hardwareType: hardware, deviceType: devtype, hasWirelessPhy: phy)
    }

    @Test(
        "NetworkManager's order: IFLA_INFO_KIND, then ARPHRD, then sysfs",
        arguments: [
            (facts(nil), InterfaceKind.wired),
            (facts(nil, devtype: "wlan"), .wifi),
            (facts(nil, phy: true), .wifi),
            (facts(nil, devtype: "wwan"), .cellular),
            (facts(nil, HardwareType.rawIP), .cellular),
            (facts(nil, HardwareType.loopback), .loopback),
            (facts(nil, HardwareType.ppp), .vpn),
            (facts(nil, HardwareType.ppp, devtype: "wwan"), .cellular),
            (facts(nil, HardwareType.none), .vpn),
            (facts("wireguard", HardwareType.none), .vpn),
            (facts("tun", HardwareType.none), .vpn),
            (facts("xfrm", HardwareType.none), .vpn),
            (facts("gre", HardwareType.ipGRE), .vpn),
            (facts("veth"), .other),
            (facts("bridge"), .other),
            (facts("vrf"), .other),
        ])
    func kind(facts: LinkKindFacts, expected: InterfaceKind) {
        #expect(InterfaceClassifier.kind(of: facts) == expected)
    }

    @Test("Stacked devices take their lower device's kind; aggregates are wired when a port is")
    func stacked() {
        #expect(InterfaceClassifier.kind(of: Self.facts("vlan"), lowerKind: .wifi) == .wifi)
        #expect(InterfaceClassifier.kind(of: Self.facts("macvlan"), lowerKind: nil) == .other)
        #expect(InterfaceClassifier.kind(of: Self.facts("bond"), portKinds: [.wired, .other]) == .wired)
        #expect(InterfaceClassifier.kind(of: Self.facts("bridge"), portKinds: [.other]) == .other)
    }

    @Test("Only cellular is expensive")
    func expensive() {
        #expect(InterfaceKind.allCases.filter(\.isExpensive) == [.cellular])
    }
}
