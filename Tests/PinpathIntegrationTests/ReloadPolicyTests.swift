import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Issue 11, rule 7, through the running agent: a SIGHUP that changes a policy's pins (same name) restarts
/// the endpoint under the new pins, so that a revoked key stops being accepted at the next probe.
@Suite("Reload applies policy changes", .serialized)
struct ReloadPolicyTests {
    let pki = TestPKI.shared

    func configuration(pins: [String], port: UInt16) throws -> String {
        let pins = try pki.chain(pins).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        return """
            events: { output: events.jsonl, probes: all }
            policies:
              api-pins: { mode: public_key, pins: [\(pins)], ca_file: \(pki.path("store")) }
            endpoints:
              - { name: api, url: "https://127.0.0.1:\(port)/", policy: api-pins, interval: 1s, timeout: 900ms }
            """
    }

    /// The events in `file` so far.
    static func events(_ file: String) -> [[String: Any]] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits for an event after the first `after` that satisfies `matching`.
    @discardableResult
    static func wait(
        _ file: String, for type: String, after: Int = 0, timeout: Duration = .seconds(15),
        _ matching: ([String: Any]) -> Bool = { _ in true }
    ) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let event = events(file).dropFirst(after).first(where: { $0["event"] as? String == type && matching($0) }) { return event }
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ShellError(description: "no \(type) event within \(timeout); events: \(events(file).map { $0["event"] as? String ?? "?" })")
    }

    @Test(
        """
        Pins rotated under the same policy name: config.reloaded lists the endpoint as changed and the next probe is rejected; an \
        unchanged reload changes nothing
        """
    )
    func pinRevocation() async throws {
        let server = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        defer { server.stop() }
        let agent = try AgentProcess(configuration: try configuration(pins: ["inter", "root"], port: server.port))
        let events = "\(agent.directory)/events.jsonl"
        try agent.start()
        try await Self.wait(events, for: "probe.completed") { $0["outcome"] as? String == "success" }

        var mark = Self.events(events).count
        kill(agent.pid, SIGHUP)
        let unchanged = try await Self.wait(events, for: "config.reloaded", after: mark)
        #expect(unchanged["changed"] as? [String] == [], "\(unchanged)")

        // The pinned keys are revoked: the same policy now pins another CA's keys.
        try configuration(pins: ["otherinter", "otherroot"], port: server.port)
            .write(toFile: agent.configurationPath, atomically: true, encoding: .utf8)
        mark = Self.events(events).count
        kill(agent.pid, SIGHUP)
        let reloaded = try await Self.wait(events, for: "config.reloaded", after: mark)
        #expect(reloaded["changed"] as? [String] == ["api"], "\(reloaded)")
        mark = Self.events(events).count
        let next = try await Self.wait(events, for: "probe.completed", after: mark)
        #expect(next["outcome"] as? String == "failure")
        #expect(next["error_category"] as? String == "policy_rejected", "\(next)")
        #expect(try await agent.stop() == 0, "\(agent.stderr)")
    }
}
