import Foundation
import PinpathTestSupport
import Testing

/// A reload that adds an `ldap://` endpoint (StartTLS, which libcurl never starts) is rejected with the reason,
/// the running configuration goes on, and the LDAP server never hears from the agent.
@Suite("Reload refuses ldap://", .serialized)
struct ReloadRefusedKindTests {
    @Test("Attack: SIGHUP with an ldap:// endpoint: config.rejected naming the URL and why, no connection to slapd, probing goes on")
    func reloadRefusesLDAP() async throws {
        let pki = TestPKI.shared
        let chain = "\(pki.directory)/ip-chain-for-reload-ldap.pem"
        try [pki.path("ip"), pki.path("inter")].map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: chain, atomically: true, encoding: .utf8)
        let slapd = try SlapdServer(certificate: (chain, pki.path("ip", "key")), directory: pki.directory)
        defer { slapd.stop() }
        let refused = try TLSServer.freePort()  // nothing listens: each probe is a quick connect_failed
        let main = """
            events: { output: events.jsonl, probes: all }
            defaults: { interval: 1s, timeout: 900ms }
            endpoints:
              - { name: main, url: "http://127.0.0.1:\(refused)/" }

            """
        let agent = try AgentProcess(configuration: main)
        let events = "\(agent.directory)/events.jsonl"
        try agent.start()
        try await ReloadPolicyTests.wait(events, for: "probe.completed")

        try (main + "  - { name: directory, url: \"ldap://127.0.0.1:\(slapd.ldapPort)\", starttls: true }\n").write(
            toFile: agent.configurationPath, atomically: true, encoding: .utf8)
        var mark = ReloadPolicyTests.events(events).count
        kill(agent.pid, SIGHUP)
        let rejected = try await ReloadPolicyTests.wait(events, for: "config.rejected", after: mark)
        let errors = try #require(rejected["errors"] as? [[String: Any]], "\(rejected)")
        #expect(errors.map { $0["key"] as? String } == ["endpoints[1].url"], "\(rejected)")
        let message = errors.first?["message"] as? String ?? ""
        #expect(message.contains("ldap:// (LDAP with StartTLS) is refused"), "\(rejected)")
        #expect(message.contains("never starts TLS after the server accepts StartTLS") && message.contains("use ldaps://"), "\(rejected)")

        mark = ReloadPolicyTests.events(events).count
        try await ReloadPolicyTests.wait(events, for: "probe.completed", after: mark) { $0["endpoint"] as? String == "main" }
        #expect(ReloadPolicyTests.events(events).allSatisfy { $0["endpoint"] as? String != "directory" })
        #expect(slapd.connections(to: slapd.ldapPort) == 0, "\(slapd.logText)")
        #expect(try await agent.stop() == 0, "\(agent.stderr)")
    }
}
