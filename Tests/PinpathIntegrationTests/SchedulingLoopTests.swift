import Foundation
import PinpathTestSupport
import Testing

/// The agent's scheduling loop sleeps between probes, also after something woke it early.
@Suite("The agent's scheduling loop")
struct SchedulingLoopTests {
    @Test("After reloads (SIGHUP wakes the loop early) the agent is idle between probes, not spinning")
    func idleAfterReload() async throws {
        let directory = "\(TestPKI.shared.directory)/idle-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = "\(directory)/pinpath.yaml"
        try """
            events: { probes: all }
            endpoints:
              - { name: refused, url: "http://127.0.0.1:9/", interval: 1s, timeout: 500ms }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", config], stdout: devNull)
        close(devNull)
        var stopped = false
        defer { if !stopped { Shell.kill(agent) } }
        try await Task.sleep(for: .seconds(2))
        for _ in 0..<3 {
            kill(agent, SIGHUP)
            try await Task.sleep(for: .milliseconds(300))
        }
        let before = try #require(ProcessSample.cpuTime(pid: agent))
        try await Task.sleep(for: .seconds(3))
        let used = try #require(ProcessSample.cpuTime(pid: agent)) - before
        print("CPU over 3 s after three reloads, one probe a second: \(used)")
        // Three probes of a refused port take a few milliseconds; the spinning loop took a whole core (3 s).
        #expect(used < .milliseconds(600), "the agent used \(used) of CPU in 3 s while idle")
        stopped = true
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(6)) == 0)
    }
}
