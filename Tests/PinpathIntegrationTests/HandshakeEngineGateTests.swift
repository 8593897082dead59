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

    @Test(
        "A blackholed address of a tls:// name is skipped, the other one probed; with both blackholed the probe is unreachable, naming them"
    )
    func addressCheckSkipsBlackholes() throws {
        let pki = TestPKI.shared
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "addr add \(Self.serving)/32 dev lo")
        let port = 4433
        try network.spawn(
            in: network.gateway,
            [
                "openssl", "s_server", "-accept", "\(Self.serving):\(port)", "-cert", pki.path("valid"), "-key", pki.path("valid", "key"),
                "-cert_chain", pki.path("inter"), "-www", "-quiet",
            ])
        try network.waitForListener(in: network.gateway, Self.serving, port)
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
            let result = try Shell.run([
                "ip", "netns", "exec", network.host, "/usr/bin/env", "SSL_CERT_FILE=\(pki.path("store"))", Shell.pinpath, "run", "--once",
                "--config", configuration,
            ])
            let completed = result.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["event"] as? String == "probe.completed" }
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
}
