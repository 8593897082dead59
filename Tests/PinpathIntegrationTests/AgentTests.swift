import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// `pinpath run` in a network namespace against `openssl s_server` beyond its gateway, scripted through a
/// server outage, a key that is not pinned, a link loss, a broken reload and SIGTERM.
@Suite("The agent on the kernel", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct AgentTests {
    static let serverAddress = "198.51.100.7", port = 4433
    let pki = TestPKI.shared

    /// The agent's events so far, parsed.
    final class Events {
        let file: String
        init(file: String) { self.file = file }

        var all: [[String: Any]] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        func of(_ type: String) -> [[String: Any]] { all.filter { $0["event"] as? String == type } }

        /// Waits until an event of `type` after the first `after` events satisfies `matching`.
        @discardableResult
        func wait(
            for type: String, after: Int = 0, timeout: Duration = .seconds(15), _ matching: ([String: Any]) -> Bool = { _ in true }
        ) async throws -> [String: Any] {
            let deadline = ContinuousClock.now + timeout
            while true {
                // Checked once more after the deadline: a test task the busy pool resumed late still sees
                // what arrived in time.
                if let event = all.dropFirst(after).first(where: { $0["event"] as? String == type && matching($0) }) { return event }
                if ContinuousClock.now >= deadline { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw ShellError(description: "no \(type) event within \(timeout); events: \(all.map { $0["event"] as? String ?? "?" })")
        }

        func state(_ state: String) -> ([String: Any]) -> Bool { { $0["state"] as? String == state } }
    }

    /// A TLS server for valid.test in the gateway namespace, at 198.51.100.7:4433 (or another `address` or `port`).
    func startServer(
        _ network: TestNetwork, leaf: String, chain: [String], address: String = Self.serverAddress, port: Int = Self.port
    ) throws -> pid_t {
        let chainFile = "\(pki.directory)/agent-chain-\(leaf).pem"
        try chain.map { try String(contentsOfFile: pki.path($0), encoding: .utf8) }.joined().write(
            toFile: chainFile, atomically: true, encoding: .utf8)
        let pid = try Shell.spawn([
            "ip", "netns", "exec", network.gateway, "openssl", "s_server", "-accept",
            "\(address.contains(":") ? "[\(address)]" : address):\(port)",
            "-cert", pki.path(leaf), "-key", pki.path(leaf, "key"), "-cert_chain", chainFile, "-www", "-quiet",
        ])
        do {
            try network.waitForListener(in: network.gateway, address, port)
        } catch {
            Shell.kill(pid)
            throw error
        }
        return pid
    }

    func configuration(metrics: String) throws -> String {
        let pins = try pki.chain(["inter", "root"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        return """
            events: { output: stdout, probes: all }
            policies:
              test-pins:
                mode: public_key
                pins: [\(pins)]
                ca_file: \(pki.path("store"))
            endpoints:
              - name: api
                url: https://valid.test:\(Self.port)/
                policy: test-pins
                interval: 1s
                timeout: 900ms
                failure_threshold: 2
            metrics: { textfile: \(metrics) }
            """
    }

    @Test("Up, down after the threshold, pin failure (suppressed), unreachable on link loss and back, a rejected reload, SIGTERM")
    func scenario() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "addr add \(Self.serverAddress)/32 dev lo")
        try network.hosts("\(Self.serverAddress) valid.test\n")

        let directory = "\(pki.directory)/agent-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/pinpath.yaml"
        let metrics = "\(directory)/pinpath.prom"
        try configuration(metrics: metrics).write(toFile: config, atomically: true, encoding: .utf8)
        var server = try startServer(network, leaf: "valid", chain: ["inter"])
        defer { Shell.kill(server) }

        let events = Events(file: "\(directory)/events.jsonl")
        let output = open(events.file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let agent = try Shell.spawn(["ip", "netns", "exec", network.host, Shell.pinpath, "run", "--config", config], stdout: output)
        close(output)
        defer { Shell.kill(agent) }

        let started = try await events.wait(for: "agent.started")
        #expect((started["path"] as? [String: Any])?["interface"] as? String == "pa0")
        try await events.wait(for: "endpoint.state_changed", events.state("up"))

        // The server goes away: two failed probes, then down.
        Shell.kill(server)
        let down = try await events.wait(for: "endpoint.state_changed", events.state("down"))
        #expect(down["consecutive"] as? Int == 2)
        #expect((down["probe"] as? [String: Any])?["error_category"] as? String == "connect_failed")

        // It comes back with a key that is not pinned (a valid chain for valid.test from another CA).
        server = try startServer(network, leaf: "rogue", chain: ["otherinter"])
        let failure = try await events.wait(for: "pin.failure")
        #expect(failure["hostname"] as? String == "valid.test")
        #expect(failure["validation-result"] as? Int == 1)
        #expect((failure["known-pins"] as? [String])?.count == 2)
        // Subjects and pins by default; the PEMs only with events.include_certificates.
        #expect((failure["served_chain"] as? [[String: Any]])?.first?["subject"] as? String == "CN=valid.test")
        #expect(failure["served-certificate-chain"] == nil)
        let probesBefore = events.of("probe.completed").count
        _ = try await events.wait(for: "probe.completed", after: events.all.count) { _ in
            events.of("probe.completed").count >= probesBefore + 3
        }
        #expect(events.of("pin.failure").count == 1, "identical reports are suppressed")
        Shell.kill(server)
        server = try startServer(network, leaf: "valid", chain: ["inter"])
        try await events.wait(for: "endpoint.state_changed", after: events.all.count, events.state("up"))

        // The host's link goes down: reachability.changed, and the endpoint is unreachable, not down.
        var mark = events.all.count
        try network.ip(network.host, "link set pa0 down")
        try await events.wait(for: "reachability.changed", after: mark) { $0["status"] as? String == "unreachable" }
        let unreachable = try await events.wait(for: "endpoint.state_changed", after: mark, events.state("unreachable"))
        #expect(unreachable["previous_state"] as? String == "up")
        #expect(
            events.all.dropFirst(mark).filter { $0["event"] as? String == "endpoint.state_changed" && $0["state"] as? String == "down" }
                .isEmpty)
        mark = events.all.count
        let restored = ContinuousClock.now
        try network.ip(network.host, "link set pa0 up")
        try network.ip(network.host, "route replace default via \(TestNetwork.gatewayAddress)")
        try await events.wait(for: "endpoint.state_changed", after: mark, timeout: .seconds(10), events.state("up"))
        print("up again \(ContinuousClock.now - restored) after the link and route were restored")

        // A broken configuration is rejected with its position; probing goes on.
        try "endpoints:\n  - name: api\n    intervall: 1s\n".write(toFile: config, atomically: true, encoding: .utf8)
        mark = events.all.count
        _ = kill(try agentPID(in: network.host), SIGHUP)
        let rejected = try await events.wait(for: "config.rejected", after: mark)
        #expect("\(rejected["errors"] ?? "")".contains("intervall"))
        try await events.wait(for: "probe.completed", after: events.all.count)

        let metricsText = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(metricsText.contains("pinpath_pin_failures_total{endpoint=\"api\",enforced=\"true\"}"))

        // SIGTERM: agent.stopping, exit 0.
        let status = try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(6))
        #expect(status == 0)
        let stopping = try await events.wait(for: "agent.stopping")
        #expect(stopping["reason"] as? String == "SIGTERM")
        let sequence = events.all.compactMap { $0["seq"] as? Int }
        #expect(sequence == Array(1...sequence.count), "seq counts up by one with no gap")
    }

    @Test("Standard output closed early: no crash, the drops are counted (in the metrics)")
    func closedOutput() async throws {
        let network = try TestNetwork()
        defer { network.remove() }
        let directory = "\(pki.directory)/agent-closed-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/pinpath.yaml"
        let metrics = "\(directory)/pinpath.prom"
        try """
        events: { probes: all }
        endpoints:
          - { name: nothing-there, url: "http://\(TestNetwork.gatewayAddress):9/", interval: 1s, timeout: 500ms }
        metrics: { textfile: \(metrics) }
        """.write(toFile: config, atomically: true, encoding: .utf8)
        var pipe: [Int32] = [0, 0]
        #expect(Glibc.pipe(&pipe) == 0)
        close(pipe[0])  // the reader is gone before the agent writes a line
        let agent = try Shell.spawn(["ip", "netns", "exec", network.host, Shell.pinpath, "run", "--config", config], stdout: pipe[1])
        close(pipe[1])
        try await Task.sleep(for: .seconds(3))
        #expect(kill(agent, 0) == 0, "still running")
        let status = try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(6))
        #expect(status == 0)
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        // One sample per reason (queue_full, write_failed): their sum is what was lost.
        let dropped = text.split(separator: "\n").filter { $0.hasPrefix("pinpath_events_dropped_total{") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }
        #expect(dropped.count == 2 && dropped.reduce(0, +) > 0, "\(text)")
    }

    @Test(
        """
        systemd: READY=1 after start, WATCHDOG=1 every half WATCHDOG_USEC and STATUS= with the endpoints' states from the \
        scheduling loop, RELOADING=1 then READY=1 around SIGHUP, STOPPING=1 on SIGTERM
        """)
    func notifications() async throws {
        let directory = "\(pki.directory)/agent-notify-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = "\(directory)/pinpath.yaml"
        let socketPath = "\(directory)/notify.sock"
        try "endpoints:\n  - { name: closed, url: \"http://127.0.0.1:9/\", interval: 1s, timeout: 500ms }\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        let listener = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        var messages: [String] = []
        func receive(until expected: String) async throws {
            let deadline = ContinuousClock.now + .seconds(10)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while ContinuousClock.now < deadline {
                let count = recv(listener, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    messages.append(String(decoding: buffer[..<count], as: UTF8.self))
                    if messages.last!.contains(expected) { return }
                    continue
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw ShellError(description: "no \(expected) from the agent; got \(messages)")
        }
        // The agent's own environment, not the test process's (tests run in parallel and spawn agents too);
        // env execs pinpath, so the PID is the agent's.
        let devNull = open("/dev/null", O_WRONLY)
        let agent = try Shell.spawn(
            [
                "/usr/bin/env", "NOTIFY_SOCKET=\(socketPath)", "WATCHDOG_USEC=400000",  // a beat every 0.2 s
                Shell.pinpath, "run", "--config", config,
            ], stdout: devNull)
        close(devNull)
        defer { Shell.kill(agent) }
        try await receive(until: "READY=1")
        // The endpoint's 1 s interval alone would wake the loop too rarely for a 0.4 s watchdog: the beats prove
        // the loop turns for them. The closed port's probe makes the endpoint down.
        for _ in 0..<3 { try await receive(until: "WATCHDOG=1") }
        try await receive(until: "STATUS=1 endpoint: 0 up, 1 down, 0 unreachable, 0 unknown")
        kill(agent, SIGHUP)
        try await receive(until: "RELOADING=1")
        #expect(messages.last!.contains("MONOTONIC_USEC="))
        try await receive(until: "READY=1")
        let status = try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(6))
        try await receive(until: "STOPPING=1")
        #expect(status == 0)
    }

    /// The agent's own PID: `ip netns exec` execs it, so it is the spawned process itself.
    private func agentPID(in namespace: String) throws -> pid_t {
        let output = try Shell.check(["ip", "netns", "pids", namespace])
        for line in output.split(separator: "\n") {
            guard let pid = pid_t(line) else { continue }
            let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
            if command.contains("pinpath") && command.contains("run") { return pid }
        }
        throw ShellError(description: "no pinpath run in \(namespace)")
    }
}
