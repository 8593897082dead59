import Foundation
import PinpathReachability
import PinpathTestSupport
import Testing

/// Issue 6's network-fault scenario: a minute of link flaps every 100 ms and thousands of address and route
/// changes a second, watched at once by two monitors in this process (one with the default receive buffer,
/// one with a buffer so small that the storm overruns it) and by the `pinpath` agent probing a TLS server
/// beyond the flapping link. Afterwards each must agree with the kernel, have reported every change in order
/// and once, and the agent must still run with what it had before.
@Suite("Network faults", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct NetworkFaultTests {
    /// A minute, as the issue asks. PINPATH_FAULT_SECONDS shortens it while developing; CI leaves it unset.
    static let stormSeconds = ProcessInfo.processInfo.environment["PINPATH_FAULT_SECONDS"].flatMap(Int.init) ?? 60
    /// Churn commands a second that the storm aims for (it reports what the kernel actually absorbed).
    static let churnRate = 4000
    /// Watched: the targets whose routes the churn rewrites, one it never touches, the gateway (on-link) and
    /// the IPv6 gateway.
    static let targets = NetworkStorm.churnedTargets + ["192.0.2.200", TestNetwork.gatewayAddress, TestNetwork.gatewayAddress6]
    /// How long the monitors and the agent may take to agree with the kernel once the storm is over. A
    /// monitor that missed a change without noticing never agrees; a healthy one takes milliseconds.
    static let settleTimeout: Duration = .seconds(30)

    @Test("A minute of flaps and churn: the monitors end equal to the kernel, in order, once each; the agent survives without leaks")
    func storm() async throws {
        let network = try TestNetwork(ipv6: true)
        defer { network.remove() }
        let directory = "\(TestPKI.shared.directory)/netfault-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)

        let monitors = [
            RecordedMonitor("8 MiB buffer", try await startMonitor(network, receiveBufferSize: 8 << 20)),
            // The kernel doubles it: 8 KiB, a few dozen messages, which the storm overruns many times a second.
            RecordedMonitor("4 KiB buffer", try await startMonitor(network, receiveBufferSize: 4096)),
        ]
        for recorded in monitors {
            #expect(try await eventually { recorded.handledEvents.count == 1 + Self.targets.count })
        }
        let agent = try await FaultAgent(network: network, directory: directory)
        defer { agent.kill() }
        let before = try #require(try await agent.settledVitals())
        print("agent before the storm: \(before.vitals.vitals) (\(before.descriptors) fds settled)")

        let seed = ProcessInfo.processInfo.environment["PINPATH_FAULT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("storm: \(Self.stormSeconds) s, flaps every 100 ms, churn at \(Self.churnRate)/s, seed \(seed) (PINPATH_FAULT_SEED)")
        let storm = NetworkStorm(
            network: network, duration: .seconds(Self.stormSeconds), churnRate: Self.churnRate, seed: seed, directory: directory)
        let agentPID = agent.pid
        let sampler = Task { await ProcessSample.sample(pid: agentPID, every: .seconds(1)) }
        let report = try await storm.run()
        sampler.cancel()
        let samples = await sampler.value
        let stormEnded = ContinuousClock.now
        print("storm done: \(report)")
        #expect(report.churnRate >= 1000, "the storm must reach thousands of changes a second to mean anything")

        // Settling: the kernel read once a round and compared with each monitor and with what the agent last
        // reported, until all agree; each one's time is that of the first round it agreed in.
        var agreedAfter: [String: Duration] = [:]
        var differences: [String: [String]] = [:]
        let agreed = try await eventually(timeout: Self.settleTimeout) {
            let kernel = try KernelView(namespace: network.host, destinations: Self.targets)
            let now = ContinuousClock.now - stormEnded
            for recorded in monitors where agreedAfter[recorded.label] == nil {
                differences[recorded.label] = kernel.differences(from: recorded.monitor.currentPath)
                if differences[recorded.label] == [] { agreedAfter[recorded.label] = now }
            }
            if agreedAfter["agent"] == nil {
                let reported = agent.reportedPath
                differences["agent"] = reported == kernel.pathSummary ? [] : ["says \(reported), the kernel \(kernel.pathSummary)"]
                if reported == kernel.pathSummary { agreedAfter["agent"] = now }
            }
            return agreedAfter.count == monitors.count + 1
        }
        #expect(
            agreed, "\(Self.settleTimeout) after the storm, still different from the kernel: \(differences.filter { !$0.value.isEmpty })")

        // The monitors: still equal a moment later, their event streams sound.
        for recorded in monitors {
            try await audit(recorded, agreedAfter: agreedAfter[recorded.label], network: network)
        }
        // Most carrier flaps change the path; a monitor that reports a tenth of them still keeps up. One that
        // stalls, or loses changes silently, reports far fewer (or fails the audit).
        #expect(monitors[0].streamedEvents.filter { if case .path = $0 { true } else { false } }.count >= report.flaps / 10)
        let fresh = try await startMonitor(network, receiveBufferSize: 8 << 20)
        defer { fresh.stop() }
        for recorded in monitors {
            #expect(recorded.monitor.currentPath == fresh.currentPath, "\(recorded.label): equal to a monitor started after the storm")
        }
        #expect(monitors[1].monitor.statistics.resyncs > 0, "the 4 KiB buffer must overrun during the storm")

        // The agent: still running, agreeing with the kernel, recovering, without leaks; then a clean stop.
        try await agent.check(samples: samples, before: before, agreedAfter: agreedAfter["agent"])
    }

    func startMonitor(_ network: TestNetwork, receiveBufferSize: Int) async throws -> ReachabilityMonitor {
        try await ReachabilityMonitor.start(
            .init(networkNamespace: network.host, receiveBufferSize: receiveBufferSize, resolutionTimeout: .seconds(2)),
            targets: Self.targets.map { try ReachabilityTarget(parsing: $0) })
    }

    /// Checks that a settled monitor stays equal to the kernel, audits its events and prints its figures.
    func audit(_ recorded: RecordedMonitor, agreedAfter: Duration?, network: TestNetwork) async throws {
        // Still equal a moment later: nothing was left half-applied.
        try await Task.sleep(for: .milliseconds(500))
        let kernel = try KernelView(namespace: network.host, destinations: Self.targets)
        #expect(kernel.differences(from: recorded.monitor.currentPath) == [], "\(recorded.label)")

        #expect(try await eventually { recorded.streamedEvents.count == recorded.handledEvents.count })
        let streamed = recorded.streamedEvents
        let handled = recorded.handledEvents
        #expect(streamed == handled, "\(recorded.label): the stream and the change handler got the same events in the same order")
        let (violations, counts) = EventStreamAudit.check(streamed, targets: Self.targets)
        #expect(violations.isEmpty, "\(recorded.label): \(violations.prefix(20))")
        let statistics = recorded.monitor.statistics
        print(
            "monitor (\(recorded.label)): equal to the kernel \(agreedAfter.map { "\($0)" } ?? "never") after the storm, "
                + "\(statistics.messages) messages, \(statistics.resyncs) resyncs, \(counts)")
    }
}
