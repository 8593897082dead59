import Foundation
import PinpathTestSupport
import Testing

/// Issue 13, item 5, on the kernel: a namespace whose only way out is an HTTP proxy. Its one route is the
/// veth subnet (no default route), where the proxy listens; the origin (198.51.100.7) is reachable from the
/// proxy's namespace only. Without the proxy every probe is `unreachable`; through it, `up`, with the gate
/// and the endpoint's reachability target on the proxy's address.
///
///     [host: pa0 10.99.0.1/24, no default route] ── veth ── [gateway: proxy on 10.99.0.254, origin 198.51.100.7:8080]
@Suite("Proxy in a namespace", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct ProxyNamespaceTests {
    static let origin = "198.51.100.7", port = 8080

    /// The scene: the namespaces, the origin and the proxy (stopped by the caller).
    func scene() throws -> (TestNetwork, ProxyServer) {
        let network = try TestNetwork()
        do {
            try network.ip(network.host, "route del default")
            try network.ip(network.gateway, "addr add \(Self.origin)/32 dev lo")
            try network.spawn(in: network.gateway, ["python3", "-m", "http.server", "--bind", Self.origin, "\(Self.port)"])
            try network.waitForListener(in: network.gateway, Self.origin, Self.port)
            let proxy = try ProxyServer(
                address: TestNetwork.gatewayAddress, namespace: network.gateway, directory: TestPKI.shared.directory)
            return (network, proxy)
        } catch {
            network.remove()
            throw error
        }
    }

    @Test("pinpath run: the endpoint through the proxy is up, the one without it unreachable; the proxy's address is its target")
    func agent() async throws {
        let (network, proxy) = try scene()
        defer {
            proxy.stop()
            network.remove()
        }
        let directory = "\(TestPKI.shared.directory)/proxy-agent-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = "\(directory)/pinpath.yaml"
        try """
        proxy: http://proxyuser:proxysecret@\(TestNetwork.gatewayAddress):\(proxy.port)
        endpoints:
          - name: through-proxy
            url: http://\(Self.origin):\(Self.port)/
            interval: 1s
            failure_threshold: 1
          - name: direct
            url: http://\(Self.origin):\(Self.port)/
            interval: 1s
            proxy: none
        """.write(toFile: configuration, atomically: true, encoding: .utf8)

        let events = AgentTests.Events(file: "\(directory)/events.jsonl")
        let agent = try network.startAgent(configuration: configuration, events: events.file, errors: "\(directory)/agent.stderr")
        var stopped = false
        defer { if !stopped { Shell.kill(agent) } }
        func endpoint(_ name: String, _ state: String) -> ([String: Any]) -> Bool {
            { $0["endpoint"] as? String == name && $0["state"] as? String == state }
        }

        try await events.wait(for: "endpoint.state_changed", endpoint("through-proxy", "up"))
        let direct = try await events.wait(for: "endpoint.state_changed", endpoint("direct", "unreachable"))
        #expect((direct["probe"] as? [String: Any])?["error_category"] as? String == "unreachable")
        #expect(proxy.requests.first?.target == "http://\(Self.origin):\(Self.port)/")
        #expect(proxy.requests.first?.authorized == true)

        // The proxy's address loses its route: the endpoint's target (the proxy) changes and the endpoint
        // through it is unreachable.
        let mark = events.all.count
        try network.ip(network.host, "route add blackhole \(TestNetwork.gatewayAddress)/32")
        let target = try await events.wait(for: "reachability.target_changed", after: mark) {
            $0["target"] as? String == TestNetwork.gatewayAddress
        }
        #expect(target["status"] as? String == "unreachable")
        try await events.wait(for: "endpoint.state_changed", after: mark, endpoint("through-proxy", "unreachable"))
        #expect(!events.all.contains { $0["event"] as? String == "reachability.target_changed" && $0["target"] as? String == Self.origin })

        _ = try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(8))
        stopped = true
        // The proxy's credentials are nowhere in what the agent wrote.
        let written =
            ((try? String(contentsOfFile: events.file, encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: "\(directory)/agent.stderr", encoding: .utf8)) ?? "")
        #expect(!written.contains("proxysecret"))
    }

    @Test("pinpath request: through --proxy or the environment's http_proxy it succeeds; with --proxy none it is not reachable")
    func request() throws {
        let (network, proxy) = try scene()
        defer {
            proxy.stop()
            network.remove()
        }
        let url = "http://\(Self.origin):\(Self.port)/"
        let proxyURL = "http://\(TestNetwork.gatewayAddress):\(proxy.port)"
        func request(_ environment: [String], _ arguments: [String]) throws -> Shell.Result {
            try Shell.run(["ip", "netns", "exec", network.host, "env"] + environment + [Shell.pinpath, "request", url] + arguments)
        }
        let explicit = try request([], ["--proxy", proxyURL])
        #expect(explicit.status == 0, "\(explicit.stderr)")
        #expect(explicit.stdout.contains("Directory listing"))

        let environment = try request(["http_proxy=\(proxyURL)"], [])
        #expect(environment.status == 0, "\(environment.stderr)")

        // --proxy none wins over the environment: the origin has no route, so the gate refuses (exit 4).
        let none = try request(["http_proxy=\(proxyURL)"], ["--proxy", "none"])
        #expect(none.status == 4, "\(none.stderr)")
        #expect(none.stderr.contains("no_route"), "\(none.stderr)")
        // no_proxy sends the origin direct too.
        let bypassed = try request(["http_proxy=\(proxyURL)", "no_proxy=198.51.100.0/24"], [])
        #expect(bypassed.status == 4, "\(bypassed.stderr)")
        #expect(proxy.requests.count == 2)

        // The proxy's own address without a route: the gate names the proxy.
        try network.ip(network.host, "route add blackhole \(TestNetwork.gatewayAddress)/32")
        let blackholed = try request([], ["--proxy", proxyURL])
        #expect(blackholed.status == 4, "\(blackholed.stderr)")
        #expect(blackholed.stderr.contains("through the proxy \(proxyURL)"), "\(blackholed.stderr)")
        #expect(proxy.requests.count == 2)
    }
}
