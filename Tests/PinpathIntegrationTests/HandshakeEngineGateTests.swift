import Foundation
import PinpathTestSupport
import Testing

/// The reachability gate's address check on the handshake engine: a `tls://` probe of a name checks each address
/// the name resolves to against the kernel's routes before connecting, and skips those without one. `pinpath run
/// --once` in the host namespace, whose /etc/hosts gives `valid.test` two addresses beyond the gateway, where
/// `openssl s_server` serves the test PKI's `valid.test` certificate on one of them.
@Suite("The gate's address check on tls:// probes", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct HandshakeEngineGateTests {
    static let serving = "198.51.100.7", other = "198.51.100.8"

    /// The `probe.completed` event of `pinpath run --once` in the host namespace.
    static func probe(in network: TestNetwork, configuration: String) throws -> [String: Any]? {
        let result = try Shell.run([
            "ip", "netns", "exec", network.host, "/usr/bin/env", "SSL_CERT_FILE=\(TestPKI.shared.path("store"))", Shell.pinpath, "run",
            "--once", "--config", configuration,
        ])
        return result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "probe.completed" }
    }

    /// Starts `openssl s_server` for valid.test on `address`:`port` in the gateway namespace.
    static func serve(_ network: TestNetwork, on address: String, port: Int) throws {
        let pki = TestPKI.shared
        try network.spawn(
            in: network.gateway,
            [
                "openssl", "s_server", "-accept", "\(address):\(port)", "-cert", pki.path("valid"), "-key", pki.path("valid", "key"),
                "-cert_chain", pki.path("inter"), "-www", "-quiet",
            ])
        try network.waitForListener(in: network.gateway, address, port)
    }

    @Test(
        "Happy eyeballs: a first address whose SYNs vanish beyond the gateway does not hold the probe; the second one races it after 200 ms"
    )
    func silentFirstAddressIsRaced() throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "addr add \(Self.serving)/32 dev lo")
        // The host has a route to the other address (its default route); the gateway drops what it forwards there.
        try network.ip(network.gateway, "route add blackhole \(Self.other)/32")
        try Shell.check(["ip", "netns", "exec", network.gateway, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        let port = 4433
        try Self.serve(network, on: Self.serving, port: port)
        try network.hosts("\(Self.other) valid.test\n\(Self.serving) valid.test\n")
        let scratch = try TemporaryDirectory("engine-race")
        let configuration = scratch.file("pinpath.yaml")
        try """
        events: { probes: all }
        endpoints:
          - { name: tls, url: "tls://valid.test:\(port)", timeout: 20s }

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let completed = try #require(try Self.probe(in: network, configuration: configuration))
        #expect(completed["outcome"] as? String == "success", "\(completed)")
        // Sequential attempts would wait for the first address's share of the connect time (seconds).
        let total = try #require(completed["total_ms"] as? Double, "\(completed)")
        // At least the attempt delay: the first address was dialled and never answered.
        #expect(total >= 200 && total < 2000, "the probe took \(total) ms")
    }

    @Test(
        "A blackholed address of a tls:// name is skipped, the other one probed; with both blackholed the probe is unreachable, naming them"
    )
    func addressCheckSkipsBlackholes() throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "addr add \(Self.serving)/32 dev lo")
        let port = 4433
        try Self.serve(network, on: Self.serving, port: port)
        // The blackholed address first: the check must skip it, not time out on it.
        try network.hosts("\(Self.other) valid.test\n\(Self.serving) valid.test\n")
        try network.ip(network.host, "route add blackhole \(Self.other)/32")
        let scratch = try TemporaryDirectory("engine-gate")
        let configuration = scratch.file("pinpath.yaml")
        try """
        events: { probes: all }
        endpoints:
          - { name: tls, url: "tls://valid.test:\(port)", timeout: 5s }

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        func probe() throws -> (outcome: String?, category: String?, message: String?) {
            let completed = try Self.probe(in: network, configuration: configuration)
            return (completed?["outcome"] as? String, completed?["error_category"] as? String, completed?["message"] as? String)
        }

        let skipped = try probe()
        #expect(skipped.outcome == "success", "\(skipped)")

        try network.ip(network.host, "route add blackhole \(Self.serving)/32")
        let refused = try probe()
        #expect(refused.category == "unreachable", "\(refused)")
        #expect(refused.message?.contains("no resolved address is reachable") == true, "\(refused)")
        #expect(refused.message?.contains("\(Self.other): blackhole_route") == true, "\(refused)")
        #expect(refused.message?.contains("\(Self.serving): blackhole_route") == true, "\(refused)")
    }

    @Test("pinpath audit of a link-local address with its zone (fe80::…%pa0) completes its handshake, as before the engine")
    func auditOfLinkLocalAddressWithZone() throws {
        let network = try TestNetwork(ipv6: true)
        defer { network.remove() }
        try network.ip(network.gateway, "-6 addr add fe80::fe/64 dev pb0 nodad")
        let pki = TestPKI.shared
        try network.spawn(
            in: network.gateway,
            ["openssl", "s_server", "-accept", "[::]:4433", "-cert", pki.path("ip"), "-key", pki.path("ip", "key"), "-quiet"])
        try network.waitForListener(in: network.gateway, TestNetwork.gatewayAddress6, 4433)
        let result = try Shell.run([
            "ip", "netns", "exec", network.host, Shell.pinpath, "audit", "--json", "--ca-file", pki.path("store"), "[fe80::fe%pa0]:4433",
        ])
        let audit = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        // Its addresses carry no scope on the engine: without the zone the kernel refuses the connect (EINVAL), and
        // the audit said "has no address".
        #expect(audit["address"] as? String == "[fe80::fe%pa0]:4433", "\(result.stdout) \(result.stderr)")
        #expect(audit["result"] as? String != "no_handshake", "\(result.stdout) \(result.stderr)")
    }
}
