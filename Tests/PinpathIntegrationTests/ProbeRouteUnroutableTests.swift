import Foundation
import PinpathTestSupport
import Testing

/// Issue 26: "a target the kernel cannot route to answers `probe_success 0` and the reason, with no connection
/// attempt", end to end. `pinpath run` listens in a namespace (``TestNetwork``'s host) whose only route is its own
/// subnet; a real TLS server (`openssl s_server`) listens on 192.0.2.80 in the other namespace, behind the veth
/// pair. The agent runs under `strace -f -e trace=connect`, so a `connect()` to the server's address by any of
/// its threads would be in the trace: while there is no route, `/probe` answers 200 with `probe_success 0` and the
/// category events use, the debug log says the gate refused, and the trace has no such `connect()`. Once the route
/// is added, the same `/probe` succeeds without a restart: the gate follows the kernel.
@Suite(
    "/probe of a target the kernel cannot route to", .serialized, .enabled(if: Capability.namespaces, Capability.reason),
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace"), "needs strace (scripts/packages.sh)"))
struct ProbeRouteUnroutableTests {
    static let serverAddress = "192.0.2.80"

    /// `curl`'s answer to `path` on the agent's listener, from inside the host namespace: the status and the body.
    static func fetch(_ network: TestNetwork, port: Int, _ path: String) throws -> (status: Int, body: String) {
        let result = try Shell.run([
            "ip", "netns", "exec", network.host, "curl", "-s", "--max-time", "15", "-w", "\n%{http_code}",
            "http://127.0.0.1:\(port)\(path)",
        ])
        var lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.popLast() ?? "") ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// The process `strace` started: the only child of its main thread.
    static func tracee(of tracer: pid_t) -> pid_t? {
        let children = try? String(contentsOfFile: "/proc/\(tracer)/task/\(tracer)/children", encoding: .utf8)
        return children?.split(separator: " ").first.flatMap { pid_t($0) }
    }

    @Test("No route: probe_success 0, category unreachable, the gate's refusal, no connect(); with the route: success")
    func unroutableThenRouted() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        let directory = try TemporaryDirectory("probe-unroutable")
        let pki = TestPKI.shared
        let serverPort = 8443
        let listenPort = 9819

        // The server's address lives on the gateway's loopback; the host namespace knows only 10.99.0.0/24.
        try network.ip(network.gateway, "addr add \(Self.serverAddress)/32 dev lo")
        try network.ip(network.host, "route del default")
        try network.spawn(
            in: network.gateway,
            [
                "openssl", "s_server", "-quiet", "-accept", "\(Self.serverAddress):\(serverPort)", "-cert", pki.path("valid"), "-key",
                pki.path("valid", "key"), "-cert_chain", pki.path("inter"), "-www",
            ])
        try network.waitForListener(in: network.gateway, Self.serverAddress, serverPort)
        // The name is read from the namespace's /etc/hosts: no DNS server, so no connect() of a resolver either.
        try network.hosts("127.0.0.1 localhost\n\(Self.serverAddress) valid.test\n")

        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        policies:
          pinned: { mode: public_key, ca_file: \(pki.path("store")), pins: ["sha256/\(try pki.opensslPin("inter"))", "sha256/\(try pki.opensslPin("root"))"] }
        modules:
          web: { kind: https, policy: pinned, timeout: 3s, targets: ["192.0.2.0/24"] }
        metrics:
          listen: "127.0.0.1:\(listenPort)"

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)

        let trace = directory.file("connect.trace")
        let errors = open(directory.file("agent.err"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let tracer = try Shell.spawn(
            [
                "ip", "netns", "exec", network.host, "strace", "-f", "-qq", "-e", "trace=connect", "-o", trace, Shell.pinpath, "run",
                "--config", directory.file("pinpath.yaml"),
            ], stderr: errors)
        close(errors)
        defer {
            // The agent first (strace exits when its tracee does), then strace if it is still there.
            if let agent = Self.tracee(of: tracer) { _ = kill(agent, SIGTERM) }
            usleep(200_000)
            Shell.kill(tracer)
        }
        do {
            try network.waitForListener(in: network.host, "127.0.0.1", listenPort)
        } catch {
            throw ShellError(description: "the agent does not listen: \(error); \(directory.read("agent.err") ?? "")")
        }

        let query = "/probe?module=web&target=valid.test:\(serverPort)"
        // The listener is up a moment before the agent behind it: /probe answers 503 "the agent is starting" then, a
        // condition of the server that a scraper retries, not a bad request.
        var refused = try Self.fetch(network, port: listenPort, query)
        let started = ContinuousClock.now + .seconds(30)
        while refused.body.contains("the agent is starting") && ContinuousClock.now < started {
            #expect(refused.status == 503, "\(refused)")
            try await Task.sleep(for: .milliseconds(100))
            refused = try Self.fetch(network, port: listenPort, query)
        }
        #expect(refused.status == 200, "\(refused)")
        #expect(refused.body.contains("\nprobe_success 0\n"), "\(refused.body)")
        #expect(refused.body.contains(#"pinpath_probe_failure_info{category="unreachable"} 1"#), "\(refused.body)")
        let debug = try Self.fetch(network, port: listenPort, query + "&debug=true")
        #expect(debug.status == 200, "\(debug)")
        for line in debug.body.split(separator: "\n") where line.hasPrefix("reachability gate") || line.hasPrefix("outcome ") {
            print("/probe debug without a route: \(line)")
        }
        #expect(debug.body.contains("admitted: connecting to \(Self.serverAddress) only"), "\(debug.body)")
        #expect(
            debug.body.split(separator: "\n").contains {
                $0.hasPrefix("reachability gate: refused (") && $0.hasSuffix("); no connection was attempted")
            }, "\(debug.body)")
        #expect(
            debug.body.split(separator: "\n").contains { $0.hasPrefix("outcome ") && $0.hasSuffix(", category unreachable") },
            "\(debug.body)")
        // The trace is written as the calls happen: the probes above are in it by now. That strace does record the
        // agent's connect() calls is shown after the route is added, when the same probe's connect() is there.
        let beforeRoute = directory.read("connect.trace") ?? ""
        #expect(!beforeRoute.contains(Self.serverAddress), "a connect() to the unroutable target: \(beforeRoute)")

        // The route arrives: the same probe now connects and succeeds, with no restart.
        try network.ip(network.host, "route add \(Self.serverAddress)/32 via \(TestNetwork.gatewayAddress)")
        var routed = try Self.fetch(network, port: listenPort, query)
        let deadline = ContinuousClock.now + .seconds(15)
        while !routed.body.contains("\nprobe_success 1\n") && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
            routed = try Self.fetch(network, port: listenPort, query)
        }
        #expect(routed.status == 200 && routed.body.contains("\nprobe_success 1\n"), "\(routed.body)")
        #expect(!routed.body.contains("pinpath_probe_failure_info"), "\(routed.body)")
        let afterRoute = directory.read("connect.trace") ?? ""
        #expect(afterRoute.contains("inet_addr(\"\(Self.serverAddress)\")"), "the routed probe connects, and strace sees it: \(afterRoute)")
    }
}
