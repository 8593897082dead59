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
        let scratch = try TemporaryDirectory("once")
        let directory = scratch.path
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

/// Where the lines go decides what they carry: journald's priority prefix on a standard output that is the
/// journal, the host name in a file.
@Suite("pinpath run: event levels for journald and files")
struct EventLevelOutputTests {
    static let priorities = ["info": 6, "warning": 4, "error": 3]

    /// A configuration with one endpoint nobody listens on (its probe fails: a warning, then `down`, an error).
    static func configuration(events: String) throws -> (file: String, directory: String) {
        let refused = try TLSServer.freePort()
        let directory = "\(NSTemporaryDirectory())pinpath-levels-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = "\(directory)/pinpath.yaml"
        try """
        events: { output: \(events), probes: all }
        endpoints:
          - { name: closed, url: "http://127.0.0.1:\(refused)/", timeout: 5s }

        """.write(toFile: file, atomically: true, encoding: .utf8)
        return (file, directory)
    }

    @Test("Standard output that is the journal (JOURNAL_STREAM names it): each line starts with its level's priority, <6> <4> <3>")
    func journalPrefix() throws {
        let (file, directory) = try Self.configuration(events: "stdout")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The shell names its own standard output (the test's pipe) as systemd would name the journal's stream.
        let journal = try Shell.run([
            "/bin/bash", "-c", #"JOURNAL_STREAM=$(stat -L -c %d:%i /proc/$$/fd/1) exec "$0" run --once --config "$1""#,
            Shell.pinpath, file,
        ])
        #expect(journal.status == 1, "\(journal.stderr)")
        var levels: [String] = []
        for line in journal.stdout.split(separator: "\n") {
            let prefix = try #require(line.firstIndex(of: "{"), "\(line)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line[prefix...].utf8)) as? [String: Any])
            let level = try #require(json["level"] as? String, "\(line)")
            #expect(line[..<prefix] == "<\(Self.priorities[level] ?? 0)>", "\(line)")
            levels.append("\(json["event"] ?? "") \(level)")
        }
        #expect(levels.contains("probe.completed warning") && levels.contains("endpoint.state_changed error"), "\(levels)")
        #expect(levels.first == "agent.started info" && levels.last == "agent.stopping info", "\(levels)")

        // Another stream in JOURNAL_STREAM (standard output redirected under systemd): pure JSON.
        let redirected = try Shell.run(["/usr/bin/env", "JOURNAL_STREAM=1:1", Shell.pinpath, "run", "--once", "--config", file])
        #expect(
            !redirected.stdout.isEmpty && redirected.stdout.split(separator: "\n").allSatisfy { $0.hasPrefix("{") }, "\(redirected.stdout)")
    }

    @Test("A file gets pure JSON lines with the machine's name in the envelope, even under journald")
    func fileHost() throws {
        let (file, directory) = try Self.configuration(events: "events.jsonl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try Shell.run([
            "/bin/bash", "-c", #"cd "$2" && JOURNAL_STREAM=$(stat -L -c %d:%i /proc/$$/fd/1) exec "$0" run --once --config "$1""#,
            Shell.pinpath, file, directory,
        ])
        #expect(run.status == 1, "\(run.stderr)")
        let node = try Shell.check(["/bin/uname", "-n"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let lines = try String(contentsOfFile: "\(directory)/events.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count >= 4)
        for line in lines {
            #expect(line.hasPrefix(#"{"schema":"pinpath/1","time":""#), "\(line)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(json["host"] as? String == node, "\(line)")
        }
    }
}
