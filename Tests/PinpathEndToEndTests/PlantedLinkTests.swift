import Foundation
import PinpathTestSupport
import Testing

/// Someone who can write to the agent's output directory plants symbolic links where the agent will write,
/// aiming at a file the agent's user may write (issue 11, rule 9). The agent must refuse or replace the
/// link, never write through it.
@Suite("Files the agent creates do not follow a planted link", .serialized)
struct PlantedLinkTests {
    static let victimText = "root:x:0:0:the file the attacker wants overwritten\n"

    /// A scene: a directory with a victim file, a configuration and a silent endpoint (each probe takes
    /// its whole 2 s timeout, so the agent is running long enough to be attacked).
    final class Scene {
        let directory: TemporaryDirectory
        let server: SilentServer
        var victim: String { directory.file("victim") }
        var configuration: String { directory.file("pinpath.yaml") }

        init(events: String = "stdout", metrics: Bool = false, interval: String = "2s") throws {
            directory = try TemporaryDirectory()
            server = try SilentServer()
            try PlantedLinkTests.victimText.write(toFile: directory.file("victim"), atomically: true, encoding: .utf8)
            var yaml = """
                events: { output: \(events), probes: all }
                endpoints:
                  - { name: slow, url: "http://127.0.0.1:\(server.port)/", interval: \(interval), timeout: 2s }

                """
            if metrics { yaml += "metrics: { textfile: pinpath.prom }\n" }
            try yaml.write(toFile: configuration, atomically: true, encoding: .utf8)
        }

        func plantLink(at name: String) throws {
            try FileManager.default.createSymbolicLink(atPath: directory.file(name), withDestinationPath: victim)
        }

        func isLink(_ name: String) -> Bool {
            var status = stat()
            return lstat(directory.file(name), &status) == 0 && (status.st_mode & S_IFMT) == S_IFLNK
        }

        var victimIntact: Bool { (try? String(contentsOfFile: victim, encoding: .utf8)) == PlantedLinkTests.victimText }

        deinit { server.stop() }
    }

    @Test(
        "an events file or metrics textfile that is a link is refused at start: exit 73, the link named, the target untouched",
        arguments: ["events.jsonl", "pinpath.prom"])
    func linkAtStart(_ file: String) throws {
        let scene = file == "events.jsonl" ? try Scene(events: file) : try Scene(metrics: true)
        try scene.plantLink(at: file)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", scene.configuration])
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains(file) && result.stderr.contains("symbolic link"), "\(result.stderr)")
        #expect(scene.victimIntact)
    }

    @Test("a FIFO planted at the events file is refused at start (exit 73, named), instead of holding the agent in open() for good")
    func fifoAtStart() throws {
        let scene = try Scene(events: "events.jsonl")
        #expect(mkfifo(scene.directory.file("events.jsonl"), 0o600) == 0)
        // A hang is killed after 20 s (status 137), so that it fails the test rather than stall the suite.
        let result = try Shell.run([
            "/usr/bin/timeout", "-s", "KILL", "20", Shell.pinpath, "run", "--once", "--config", scene.configuration,
        ])
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("events.jsonl") && result.stderr.contains("not a regular file"), "\(result.stderr)")
    }

    @Test("links at the old fixed temporary name, and at the textfile while the agent runs, are never written through")
    func metricsLinksWhileRunning() async throws {
        let scene = try Scene(metrics: true)
        try scene.plantLink(at: "pinpath.prom.tmp")
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let pid = try Shell.spawn([Shell.pinpath, "run", "--config", scene.configuration], stdout: devNull)
        defer { Shell.kill(pid) }
        // Metrics are written once a probe has ended (after its 2 s timeout), then every 5 s and at stop.
        let started = ContinuousClock.now
        while !FileManager.default.fileExists(atPath: scene.directory.file("pinpath.prom")), ContinuousClock.now - started < .seconds(10) {
            try await Task.sleep(for: .milliseconds(20))
        }
        try FileManager.default.removeItem(atPath: scene.directory.file("pinpath.prom"))
        try scene.plantLink(at: "pinpath.prom")
        try await Task.sleep(for: .seconds(3))  // another probe ends: the metrics at stop are new
        let status = try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(10))
        #expect(status == 0)
        #expect(scene.victimIntact)
        #expect(scene.isLink("pinpath.prom.tmp"), "the old temporary name is not used at all")
        #expect(!scene.isLink("pinpath.prom"), "the rename replaced the planted link with the metrics")
        let metrics = try String(contentsOfFile: scene.directory.file("pinpath.prom"), encoding: .utf8)
        #expect(metrics.contains("probe_success{endpoint=\"slow\"} 0"), "\(metrics)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scene.directory.path).filter {
            $0.hasSuffix(".tmp") && $0 != "pinpath.prom.tmp"
        }
        #expect(leftovers.isEmpty, "no temporary file is left behind: \(leftovers)")
    }

    @Test("a link planted at the events file before a reopen (SIGUSR1) is refused; the agent keeps running")
    func eventsLinkAtReopen() async throws {
        let scene = try Scene(events: "events.jsonl", interval: "2s")
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let stderr = open(scene.directory.file("stderr"), O_WRONLY | O_CREAT, 0o600)
        defer { close(stderr) }
        let pid = try Shell.spawn([Shell.pinpath, "run", "--config", scene.configuration], stdout: devNull, stderr: stderr)
        defer { Shell.kill(pid) }
        let started = ContinuousClock.now
        while scene.directory.lines("events.jsonl").isEmpty, ContinuousClock.now - started < .seconds(5) {
            try await Task.sleep(for: .milliseconds(20))
        }
        // logrotate's move, then the attacker's link where the agent will create the file again.
        try FileManager.default.moveItem(atPath: scene.directory.file("events.jsonl"), toPath: scene.directory.file("events.jsonl.1"))
        try scene.plantLink(at: "events.jsonl")
        kill(pid, SIGUSR1)
        try await Task.sleep(for: .seconds(3))  // a probe ends (timeout 2 s) and its event is due
        let status = try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(10))
        #expect(status == 0, "the agent kept running and stopped cleanly")
        #expect(scene.victimIntact)
        #expect(scene.isLink("events.jsonl"))
        #expect(
            scene.directory.read("stderr")?.contains("cannot reopen the events output (a symbolic link is in its place") == true,
            "the refusal is reported where the service manager logs: \(scene.directory.read("stderr") ?? "")")
    }
}
