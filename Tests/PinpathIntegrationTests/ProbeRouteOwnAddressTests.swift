import Foundation
import PinpathTestSupport
import Testing

/// Attacker's review of issue 26: `/probe?target=http://<the machine's eth0 address>:PORT/` reached a local service
/// bound to 0.0.0.0 (`probe_success 1`): traffic to one's own address goes over `lo`, past firewall rules meant for
/// loopback. Here `pinpath run` runs in a network namespace whose only non-loopback address is 10.99.0.1, beside a
/// recording server bound to 0.0.0.0 there; `/probe` is asked with curl inside the namespace.
@Suite("/probe and this machine's own addresses", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct ProbeRouteOwnAddressTests {
    @Test("Attack: without targets:, a target naming the machine's own non-loopback address is refused (403) and nothing is connected to")
    func ownAddressRefused() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        let directory = try TemporaryDirectory()
        let service = try RecordingServer(address: "0.0.0.0", directory: directory.path, namespace: network.host)
        defer { service.stop() }
        let listenPort = 9818
        try """
        events: { output: \(directory.file("events.jsonl")) }
        modules:
          web: { kind: http, timeout: 3s }
          web_own: { kind: http, timeout: 3s, targets: ["\(TestNetwork.hostAddress)/32"] }
        metrics:
          listen: "127.0.0.1:\(listenPort)"

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let agent = try network.startAgent(
            configuration: directory.file("pinpath.yaml"), events: directory.file("agent.out"), errors: directory.file("agent.err"))
        defer { Shell.kill(agent) }
        try network.waitForListener(in: network.host, "127.0.0.1", listenPort)

        func probe(_ module: String, _ target: String) throws -> (status: String, body: String) {
            let result = try Shell.run([
                "ip", "netns", "exec", network.host, "curl", "-s", "--max-time", "10", "-w", "\n%{http_code}",
                "http://127.0.0.1:\(listenPort)/probe?module=\(module)&target=\(target)",
            ])
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"))
        }

        let own = "http://\(TestNetwork.hostAddress):\(service.port)/secret"
        let refused = try probe("web", own)
        #expect(refused.status == "403", "\(refused)")
        #expect(refused.body.contains("\(TestNetwork.hostAddress) is an address of this machine"), "\(refused.body)")
        // Its IPv4-mapped form is the same address.
        let mapped = try probe("web", "http://%5B::ffff:\(TestNetwork.hostAddress)%5D:\(service.port)/secret")
        #expect(mapped.status == "403", "\(mapped)")
        #expect(service.requests.isEmpty, "the local service was reached: \(service.requests.map(\.path))")

        // A range of targets: that contains the address admits it: the service is really there to be reached.
        let admitted = try probe("web_own", own)
        #expect(admitted.status == "200", "\(admitted)")
        #expect(admitted.body.contains("probe_success 1"), "\(admitted.body)")
        #expect(service.requests.map(\.path) == ["/secret"])
    }
}
