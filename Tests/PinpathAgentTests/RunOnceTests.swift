import Foundation
import PinpathTestSupport
import Testing

/// `pinpath run --once` with more endpoints than may be probed at once: the rest wait their turn, and every
/// endpoint gets exactly one result.
@Suite("pinpath run --once")
struct RunOnceTests {
    @Test("600 endpoints, more than the 256 probes in flight: one probe.completed each, exit 1 (none up)")
    func manyEndpoints() throws {
        let refused = try TLSServer.freePort()  // nothing listens: each probe is a quick connect_failed
        let directory = "\(NSTemporaryDirectory())pinpath-once-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let endpoints = (0..<600).map { "  - { name: e\($0), url: \"http://127.0.0.1:\(refused)/e\($0)\", timeout: 5s }" }
        try ("endpoints:\n" + endpoints.joined(separator: "\n") + "\n").write(
            toFile: "\(directory)/pinpath.yaml", atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", "\(directory)/pinpath.yaml"])
        #expect(result.status == 1, "\(result.stderr)")
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let probes = events.filter { $0["event"] as? String == "probe.completed" }
        #expect(Set(probes.compactMap { $0["endpoint"] as? String }).count == 600)
        #expect(probes.count == 600)
        #expect(probes.allSatisfy { $0["error_category"] as? String == "connect_failed" })
        #expect(events.last?["event"] as? String == "agent.stopping")
    }
}
