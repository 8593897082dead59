import Foundation
import PinpathTestSupport
import Testing

/// A SIGHUP reads `include:`'s files again: an endpoint dropped into `conf.d` is added, a bad one rejects the
/// reload naming its file, and a removed file removes its endpoints.
@Suite("Reload re-reads included files", .serialized)
struct ReloadIncludeTests {
    @Test("conf.d files added, broken and removed between SIGHUPs: added, rejected naming the file, removed")
    func reloadIncluded() async throws {
        let refused = try TLSServer.freePort()  // nothing listens: each probe is a quick connect_failed
        let agent = try AgentProcess(
            configuration: """
                events: { output: events.jsonl, probes: all }
                include: conf.d/*.yaml
                defaults: { interval: 1s, timeout: 900ms }
                endpoints:
                  - { name: main, url: "http://127.0.0.1:\(refused)/" }
                """)
        let events = "\(agent.directory)/events.jsonl"
        let confD = "\(agent.directory)/conf.d"
        try FileManager.default.createDirectory(atPath: confD, withIntermediateDirectories: true)
        try agent.start()
        try await ReloadPolicyTests.wait(events, for: "probe.completed")

        try "endpoints:\n  - { name: extra, url: \"http://127.0.0.1:\(refused)/extra\" }\n".write(
            toFile: "\(confD)/extra.yaml", atomically: true, encoding: .utf8)
        var mark = ReloadPolicyTests.events(events).count
        kill(agent.pid, SIGHUP)
        let added = try await ReloadPolicyTests.wait(events, for: "config.reloaded", after: mark)
        #expect(added["added"] as? [String] == ["extra"], "\(added)")
        #expect(added["endpoints"] as? Int == 2, "\(added)")
        mark = ReloadPolicyTests.events(events).count
        try await ReloadPolicyTests.wait(events, for: "probe.completed", after: mark) { $0["endpoint"] as? String == "extra" }

        try "endpoints:\n  - { name: bad, url: \"http://127.0.0.1:\(refused)/\", interval: soon }\n".write(
            toFile: "\(confD)/bad.yaml", atomically: true, encoding: .utf8)
        mark = ReloadPolicyTests.events(events).count
        kill(agent.pid, SIGHUP)
        let rejected = try await ReloadPolicyTests.wait(events, for: "config.rejected", after: mark)
        let errors = try #require(rejected["errors"] as? [[String: Any]], "\(rejected)")
        #expect(errors.map { $0["file"] as? String } == ["\(confD)/bad.yaml"], "\(rejected)")
        #expect(errors.map { $0["key"] as? String } == ["endpoints[0].interval"], "\(rejected)")

        try FileManager.default.removeItem(atPath: "\(confD)/bad.yaml")
        try FileManager.default.removeItem(atPath: "\(confD)/extra.yaml")
        mark = ReloadPolicyTests.events(events).count
        kill(agent.pid, SIGHUP)
        let removed = try await ReloadPolicyTests.wait(events, for: "config.reloaded", after: mark)
        #expect(removed["removed"] as? [String] == ["extra"], "\(removed)")
        #expect(try await agent.stop() == 0, "\(agent.stderr)")
    }
}
