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

    /// Issue 25 §4: problems quoted whole values, so `include: "*"` beside an environment file and a private key
    /// put `PROBE_TOKEN=…` and the PEM key into the `config.rejected` event.
    @Test("include: \"*\" over an env file and a PEM key on SIGHUP: config.rejected names them, shows neither")
    func reloadIncludingSecrets() async throws {
        let token = "SECRET-reload-token-77a1"
        let refused = try TLSServer.freePort()
        let main = """
            events: { output: events.jsonl, probes: all }
            include: INCLUDE
            defaults: { interval: 1s, timeout: 900ms }
            endpoints:
              - { name: main, url: "http://127.0.0.1:\(refused)/" }
            """
        let agent = try AgentProcess(configuration: main.replacingOccurrences(of: "INCLUDE", with: "conf.d/*.yaml"))
        let events = "\(agent.directory)/events.jsonl"
        try agent.start()
        try await ReloadPolicyTests.wait(events, for: "probe.completed")

        let key = ClientCertificatePKI.shared.path("client", "key")
        try FileManager.default.copyItem(atPath: key, toPath: "\(agent.directory)/client.key")
        try "PROBE_TOKEN=\(token)\n".write(toFile: "\(agent.directory)/probe.env", atomically: true, encoding: .utf8)
        try main.replacingOccurrences(of: "INCLUDE", with: "\"*\"").write(
            toFile: agent.configurationPath, atomically: true, encoding: .utf8)
        let mark = ReloadPolicyTests.events(events).count
        kill(agent.pid, SIGHUP)
        let rejected = try await ReloadPolicyTests.wait(events, for: "config.rejected", after: mark)
        let errors = try #require(rejected["errors"] as? [[String: Any]], "\(rejected)")
        let messages = Dictionary(
            errors.map { ($0["file"] as? String ?? "", $0["message"] as? String ?? "") }, uniquingKeysWith: { first, _ in first })
        #expect(
            messages["\(agent.directory)/probe.env"]?.hasPrefix("the included file looks like an environment file") == true, "\(errors)")
        #expect(messages["\(agent.directory)/client.key"]?.hasPrefix("the included file looks like a PEM private key") == true, "\(errors)")
        #expect(try await agent.stop() == 0, "\(agent.stderr)")

        let keyLines = try String(contentsOfFile: key, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let written = ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "") + agent.stderr
        #expect(!written.contains(token), "the token reached the events or the log")
        #expect(!keyLines.contains { written.contains($0) } && !written.contains("BEGIN"), "the key reached the events or the log")
    }
}
