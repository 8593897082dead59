import Testing

@testable import PinpathReachability

/// Which addresses are on the local network (what a captive portal or a dead upstream cannot touch).
@Suite("Local network")
struct LocalNetworkTests {
    /// eth0 with 10.0.0.1/24 and 2001:db8::1/64, its default route via 10.0.0.254.
    static let path = PathEvaluator(state: PathLogicTests.healthy(), lookUpRoute: PathLogicTests.routes()).path(targets: [])

    @Test(
        "Loopback, link-local and connected subnets are local; anything behind the gateway is not",
        arguments: [
            ("127.0.0.1", true), ("::1", true), ("169.254.3.4", true), ("fe80::1", true), ("10.0.0.7", true),
            ("10.0.0.255", true), ("2001:db8::abcd", true), ("10.0.1.7", false), ("198.51.100.7", false),
            ("2001:db9::1", false), ("8.8.8.8", false),
        ])
    func local(address: String, expected: Bool) {
        #expect(Self.path.isOnLocalNetwork(IPAddress(address)!) == expected)
    }

    @Test("Prefixes that end inside a byte are compared bit by bit")
    func oddPrefix() {
        let subnet = InterfaceAddress(address: IPAddress("10.0.0.130")!, prefixLength: 25)
        #expect(subnet.subnetContains(IPAddress("10.0.0.255")!))
        #expect(!subnet.subnetContains(IPAddress("10.0.0.127")!))
        #expect(!subnet.subnetContains(IPAddress("::ffff:10.0.0.130")!))
        #expect(InterfaceAddress(address: IPAddress("10.0.0.1")!, prefixLength: 0).subnetContains(IPAddress("203.0.113.1")!))
    }

    @Test("An interface without carrier does not make its subnet local")
    func downInterface() {
        var path = Self.path
        for index in path.interfaces.indices { path.interfaces[index].hasCarrier = false }
        #expect(!path.isOnLocalNetwork(IPAddress("10.0.0.7")!))
        #expect(path.isOnLocalNetwork(IPAddress("127.0.0.1")!))
    }
}
