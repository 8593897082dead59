import Foundation
import PinpathTestSupport
import Testing

/// `pinpath run` in the host namespace of a `NetworkStorm`, probing `valid.test` (openssl s_server at
/// 198.51.100.7 in the gateway namespace, the set-up of `AgentTests`) through the flapping link, and
/// watching two extra targets, one of whose routes the storm churns.
final class FaultAgent {
    /// How far the settled descriptor count may move: the count is the fewest over ten readings in a second,
    /// which leaves out a probe's socket unless one was open at every reading, and with one endpoint probed
    /// once a second for a few milliseconds that is at most one. A leak of one descriptor per probe or per
    /// flap would be dozens.
    static let descriptorTolerance = 1
    /// Threads beyond the count before the storm, at any time: libdispatch may start a few workers while
    /// probes, monitor events and the writer are all busy; a thread per probe or per event would be hundreds.
    static let threadAllowance = 8

    let pid: pid_t
    let events: AgentTests.Events
    private let network: TestNetwork
    private var server: pid_t
    private var running = true

    init(network: TestNetwork, directory: String) async throws {
        self.network = network
        let setup = AgentTests()
        try network.ip(network.gateway, "addr add \(AgentTests.serverAddress)/32 dev lo")
        try network.hosts("\(AgentTests.serverAddress) valid.test\n")
        let config = "\(directory)/pinpath.yaml"
        try (setup.configuration(metrics: "\(directory)/pinpath.prom") + "\nreachability: { targets: [192.0.2.1, 192.0.2.200] }\n")
            .write(toFile: config, atomically: true, encoding: .utf8)
        server = try setup.startServer(network, leaf: "valid", chain: ["inter"])
        events = AgentTests.Events(file: "\(directory)/events.jsonl")
        let output = open(events.file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(output) }
        do {
            pid = try Shell.spawn(["ip", "netns", "exec", network.host, Shell.pinpath, "run", "--config", config], stdout: output)
        } catch {
            Shell.kill(server)
            throw error
        }
        do {
            try await events.wait(for: "agent.started")
            try await events.wait(for: "endpoint.state_changed", events.state("up"))
        } catch {
            kill()
            throw error
        }
    }

    /// Stops the agent (if still running) and the server.
    func kill() {
        if running { Shell.kill(pid) }
        running = false
        Shell.kill(server)
    }

    /// The agent's vitals, and its descriptor count once transient sockets are left out.
    func settledVitals() async throws -> (vitals: ProcessSample, descriptors: Int)? {
        guard let descriptors = try await ProcessSample.settledDescriptors(pid: pid), let vitals = ProcessSample.read(pid: pid) else {
            return nil
        }
        return (vitals, descriptors)
    }

    /// What the agent last said of the path: status and primary interface.
    var reportedPath: String {
        let all = events.all
        let path =
            all.last { $0["event"] as? String == "reachability.changed" } ?? all.first { $0["event"] as? String == "agent.started" }?[
                "path"] as? [String: Any]
        return "\(path?["status"] as? String ?? "?") via \(path?["interface"] as? String ?? "-")"
    }

    /// After the storm (and after it agreed with the kernel): survived, probes successfully once the network is back,
    /// holds no more descriptors or threads than before, stops cleanly, and wrote a sound output.
    func check(
        samples: [ProcessSample], before: (vitals: ProcessSample, descriptors: Int), agreedAfter: Duration?
    ) async throws {
        #expect(ProcessSample.read(pid: pid) != nil && waitpid(pid, nil, WNOHANG) == 0, "the agent survived the storm")

        // The network back as it was: the endpoint is probed successfully again. The server is started
        // afresh: s_server serves one connection at a time, and one whose client vanished in a flap can hold
        // it for seconds (what is tested here is the agent, not s_server).
        Shell.kill(server)
        server = try AgentTests().startServer(network, leaf: "valid", chain: ["inter"])
        let mark = events.all.count
        try network.ip(network.gateway, "link set pb0 up")
        try network.batch(
            network.host,
            """
            link set pa0 up
            addr replace \(TestNetwork.hostAddress6)/64 dev pa0 nodad
            route replace default via \(TestNetwork.gatewayAddress)
            route replace default via \(TestNetwork.gatewayAddress6)
            route replace \(AgentTests.serverAddress)/32 via \(TestNetwork.gatewayAddress)
            """)
        let recovered = ContinuousClock.now
        do {
            try await events.wait(for: "probe.completed", after: mark, timeout: .seconds(20)) { $0["outcome"] as? String == "success" }
        } catch {
            let tail = (try? String(contentsOfFile: events.file, encoding: .utf8))?.split(separator: "\n").suffix(15) ?? []
            Issue.record("no successful probe 20 s after the network came back; the agent's last lines:\n\(tail.joined(separator: "\n"))")
            throw error
        }
        #expect(
            try await eventually {
                self.events.of("endpoint.state_changed").last?["state"] as? String == "up"
            }, "the endpoint is up again")
        let recoveredAfter = ContinuousClock.now - recovered

        let after = try #require(try await settledVitals())
        let most = samples.max { $0.threads < $1.threads }
        func mebibytes(_ vitals: [ProcessSample]) -> String {
            vitals.map { String(format: "%.1f", Double($0.residentKiB) / 1024) }.joined(separator: ", ")
        }
        let middle = samples.isEmpty ? [] : [samples[samples.count / 2]]
        let everyTen = stride(from: 0, to: samples.count, by: 10).map { samples[$0] }
        print(
            """
            agent: agreed with the kernel \(agreedAfter.map { "\($0)" } ?? "never") after the storm, a successful probe \
            \(recoveredAfter) after the 
            """
                + "network came back; fds settled \(before.descriptors) → \(after.descriptors); threads \(before.vitals.threads) "
                + "before, at most \(most?.threads ?? 0) during, \(after.vitals.threads) after; RSS start, mid, end "
                + "\(mebibytes([before.vitals] + middle + [after.vitals])) MiB (every 10 s: \(mebibytes(everyTen))); CPU during the "
                + "storm \(String(format: "%.1f", ((samples.last?.cpu ?? .zero) - before.vitals.cpu) / .seconds(1))) s")
        #expect(
            abs(after.descriptors - before.descriptors) <= Self.descriptorTolerance,
            "descriptors before \(before.descriptors), after \(after.descriptors)")
        #expect((most?.threads ?? 0) <= before.vitals.threads + Self.threadAllowance)
        #expect(after.vitals.threads <= before.vitals.threads + Self.threadAllowance)

        let status = try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(6))
        running = false
        #expect(status == 0, "exit status on SIGTERM (nil: still running 6 s later)")

        let text = try String(contentsOfFile: events.file, encoding: .utf8)
        let (parsed, violations, counts) = AgentOutputAudit.check(text)
        #expect(violations.isEmpty, "\(violations.prefix(20))")
        #expect(parsed.last?["event"] as? String == "agent.stopping")
        print("agent output: \(counts)")
    }
}
