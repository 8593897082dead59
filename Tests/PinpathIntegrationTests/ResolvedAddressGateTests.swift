import Foundation
import PinpathTestSupport
import Testing

/// Issue 31, item 7: the reachability gate judges the address `--resolve` dials, not the URL's name. In a
/// namespace whose /etc/hosts gives `service.test` a reachable address, with recording servers beyond the
/// gateway on 10.99.0.254 (on the link) and 198.51.100.7 (routed via the default route).
@Suite("The gate judges the address dialled", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct ResolvedAddressGateTests {
    static let routed = "198.51.100.7"

    @Test(
        "A --resolve address without a route is refused as not reachable before any connection; one with a route is admitted without a default path"
    )
    func gateJudgesTheDialledAddress() throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "addr add \(Self.routed)/32 dev lo")
        let scratch = try TemporaryDirectory("resolve-gate")
        let directory = scratch.path
        let onLink = try RecordingServer(address: TestNetwork.gatewayAddress, directory: directory, namespace: network.gateway)
        defer { onLink.stop() }
        let beyond = try RecordingServer(address: Self.routed, directory: directory, namespace: network.gateway)
        defer { beyond.stop() }
        // The name alone would be admitted: it resolves to the gateway, on the link.
        try network.hosts("\(TestNetwork.gatewayAddress) service.test\n")
        func request(_ arguments: [String]) throws -> Shell.Result {
            try Shell.run(["ip", "netns", "exec", network.host, Shell.pinpath, "request"] + arguments)
        }
        let beyondURL = "http://service.test:\(beyond.port)/"
        let toBeyond = ["--resolve", "service.test:\(beyond.port):\(Self.routed)"]

        // With the default route: the dialled address is reachable, the request goes there (not to the name's address).
        let routed = try request([beyondURL, "--json"] + toBeyond)
        #expect(routed.status == 0, "\(routed.stderr)")
        #expect(beyond.requests.first?.header("Host") == "service.test:\(beyond.port)")

        // A blackhole for the dialled address only: the name's address is still reachable, the request is not.
        try network.ip(network.host, "route add blackhole \(Self.routed)/32")
        let blackholed = try request([beyondURL, "--json"] + toBeyond)
        #expect(blackholed.status == 4, "\(blackholed.stderr)")
        #expect(blackholed.stderr.contains("\(Self.routed)") && blackholed.stderr.contains("blackhole_route"), "\(blackholed.stderr)")
        #expect(blackholed.stdout.contains(#""category":"unreachable""#), "\(blackholed.stdout)")

        // No default route: the address beyond has no route (refused, exit 4), the one on the link is admitted
        // though the path has no default route and the name alone is refused.
        try network.batch(network.host, "route del blackhole \(Self.routed)/32\nroute del default")
        let unrouted = try request([beyondURL] + toBeyond)
        #expect(unrouted.status == 4, "\(unrouted.stderr)")
        #expect(unrouted.stderr.contains("\(Self.routed)") && unrouted.stderr.contains("no_route"), "\(unrouted.stderr)")
        #expect(beyond.requests.count == 1, "nothing reached the server after the first request")

        let onLinkURL = "http://service.test:\(onLink.port)/"
        let byName = try request([onLinkURL])
        #expect(byName.status == 4, "without --resolve the name is judged by the path: \(byName.stderr)")
        let admitted = try request([onLinkURL, "--resolve", "service.test:\(onLink.port):\(TestNetwork.gatewayAddress)"])
        #expect(admitted.status == 0, "\(admitted.stderr)")
        #expect(onLink.requests.map { $0.header("Host") } == ["service.test:\(onLink.port)"])
    }
}
