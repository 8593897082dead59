import Foundation
import PinpathTestSupport
import Testing

/// A name whose DNS server never answers: the request times out at its own timeout, and libcurl's resolver
/// thread, still waiting on the DNS server, is left to finish alone instead of being waited for. Waiting for
/// it would hold the engine's one thread (every other request and probe of the session) until the resolver
/// gives up.
///
///     [host: resolv.conf → 198.51.100.53, resolver timeout 4 s] ── veth ── [gateway: 198.51.100.53 blackholed]
@Suite("A DNS server that never answers", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct ResolverStallTests {
    static let nameServer = "198.51.100.53"

    @Test("pinpath request --timeout 1 to a name whose DNS never answers ends after about 1 s, not the resolver's 4 s")
    func requestEndsAtItsTimeout() throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "route add blackhole \(Self.nameServer)/32")
        try network.resolvConf("nameserver \(Self.nameServer)\noptions timeout:4 attempts:1\n")

        let start = ContinuousClock.now
        let result = try Shell.run(
            ["ip", "netns", "exec", network.host, Shell.pinpath, "request", "https://stall.pinpath.test/", "--timeout", "1"], input: "")
        let elapsed = start.duration(to: .now)
        #expect(result.status == 3, "a timeout is a connection error: \(result.stderr)")
        #expect(result.stderr.contains("timed_out"), "\(result.stderr)")
        #expect(elapsed < .milliseconds(2_500), "the request took \(elapsed): it waited for the resolver thread")
    }
}
