import Foundation
import PinpathTestSupport
import Testing

/// The agent's scheduling loop sleeps between probes, also after something woke it early.
@Suite("The agent's scheduling loop")
struct SchedulingLoopTests {
    @Test("After reloads (SIGHUP wakes the loop early) the agent is idle between probes, not spinning")
    func idleAfterReload() async throws {
        let agent = try AgentProcess(
            configuration: """
                events: { probes: all }
                endpoints:
                  - { name: refused, url: "http://127.0.0.1:9/", interval: 1s, timeout: 500ms }
                """)
        try agent.start()
        try await Task.sleep(for: .seconds(2))
        for _ in 0..<3 {
            kill(agent.pid, SIGHUP)
            try await Task.sleep(for: .milliseconds(300))
        }
        let before = try #require(ProcessSample.cpuTime(pid: agent.pid))
        try await Task.sleep(for: .seconds(3))
        let used = try #require(ProcessSample.cpuTime(pid: agent.pid)) - before
        print("CPU over 3 s after three reloads, one probe a second: \(used)")
        // Three probes of a refused port take a few milliseconds; the spinning loop took a whole core (3 s).
        #expect(used < .milliseconds(600), "the agent used \(used) of CPU in 3 s while idle")
        #expect(try await agent.stop() == 0)
    }
}
