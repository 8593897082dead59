import Foundation
import PinpathTestSupport
import Testing

/// The built `pinpath run` writing many events while its output fails under it (issue 6): a reader that goes
/// away or stops reading, a file system that fills up and frees again, the events file renamed (logrotate) or
/// deleted, and SIGUSR1 sent hundreds of times. Every line that reaches the output is whole JSON, `seq`
/// counts on with no gap except where an `events.dropped` line accounts for it, and the agent exits 0.
@Suite("Sink faults", .serialized)
struct SinkFaultTests {
    /// A directory for one test, removed after it.
    final class Scene {
        let directory: String
        let refused: HostileServer
        init() throws {
            directory = "\(TestPKI.shared.directory)/sink-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            refused = try HostileServer(.refuse, directory: directory)
        }
        /// The agent, once ``configure(endpoints:events:)`` made it.
        private var process: AgentProcess?
        private var mounted: String?

        deinit {
            process = nil  // killed, if still running, before its file system goes
            // Lazy: the agent's descriptor, if it outlived a failed expectation, cannot keep it mounted.
            if let mounted { _ = try? Shell.run(["umount", "-l", mounted]) }
            refused.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// The agent's configuration: `endpoints` endpoints probed every second, each probe refused at once and
        /// each written as a `probe.completed` line of about 450 bytes.
        func configure(endpoints: Int, events: String) throws -> AgentProcess {
            let list = (0..<endpoints).map {
                "  - { name: e\($0), url: \"http://127.0.0.1:\(refused.port)/\($0)\", interval: 1s, timeout: 1s }\n"
            }
            let process = try AgentProcess(
                configuration: "events: \(events)\nmetrics: { textfile: \(directory)/pinpath.prom }\nendpoints:\n\(list.joined())",
                directory: directory)
            self.process = process
            return process
        }

        /// Mounts a 256 KiB tmpfs (unmounted at the end) holding a file that leaves `free` bytes; returns the
        /// mount point and that file, whose deletion gives the space back.
        func mountFullFileSystem(free: Int) throws -> (mountPoint: String, filler: String) {
            let mountPoint = "\(directory)/tmpfs"
            guard mkdir(mountPoint, 0o755) == 0 else { throw ShellError(description: "mkdir \(mountPoint): \(errno)") }
            _ = try Shell.check(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mountPoint])
            mounted = mountPoint
            let filler = "\(mountPoint)/filler"
            guard FileManager.default.createFile(atPath: filler, contents: Data(count: (256 << 10) - free)) else {
                throw ShellError(description: "cannot fill \(mountPoint)")
            }
            return (mountPoint, filler)
        }

        /// `pinpath_events_dropped_total` from the metrics textfile (written every 5 s after probes), all reasons.
        var droppedInMetrics: Int? {
            let text = (try? String(contentsOfFile: "\(directory)/pinpath.prom", encoding: .utf8)) ?? ""
            let samples = text.split(separator: "\n").filter { $0.hasPrefix("pinpath_events_dropped_total{") }
                .compactMap { Double($0.split(separator: " ").last ?? "") }
            return samples.isEmpty ? nil : Int(samples.reduce(0, +))
        }
    }

    /// The lines of an event output, each parsed; `invalid` holds any line that is not a JSON object with a
    /// `seq` (a partial line would be one), and a last line without its newline.
    struct Lines {
        var events: [[String: Any]] = []
        var invalid: [String] = []
        var seqs: [Int] { events.map { $0["seq"] as! Int } }

        init(_ data: Data) {
            let text = String(decoding: data, as: UTF8.self)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            if let last = lines.last, last.isEmpty {
                lines.removeLast()
            } else if let last = lines.popLast() {
                invalid.append("no newline: \(last)")
            }
            for line in lines {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["seq"] is Int {
                    events.append(object)
                } else {
                    invalid.append(String(line.prefix(200)))
                }
            }
        }

        init(file: String) { self.init(FileManager.default.contents(atPath: file) ?? Data()) }

        func of(_ type: String) -> [[String: Any]] { events.filter { $0["event"] as? String == type } }
    }

    /// Waits until `condition` holds, checking every 50 ms (and once more after the deadline).
    static func wait(_ what: String, timeout: Duration = .seconds(20), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                if condition() { return }
                throw ShellError(description: "waited \(timeout) for \(what)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Threads of `pid` whose kernel wait channel names `function` (`pipe_write` matches `anon_pipe_write` too).
    static func threadsWaiting(in function: String, pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/wchan", encoding: .utf8)) ?? "").contains(function)
        }.count
    }

    static func descriptorCount(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    @Test("Standard output's reader goes away mid-run: the agent keeps probing, counts the drops, exits 0")
    func readerGoesAway() async throws {
        let scene = try Scene()
        let agent = try scene.configure(endpoints: 20, events: "{ output: stdout, probes: all }")
        let reader = try agent.startOnPipe()
        // Read the first 20 lines or so, then go away as `pinpath run | head` would.
        _ = fcntl(reader, F_SETFL, O_NONBLOCK)
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        try await Self.wait("20 lines on standard output") {
            let count = read(reader, &buffer, buffer.count)
            if count > 0 { received.append(contentsOf: buffer[..<count]) }
            return received.filter { $0 == UInt8(ascii: "\n") }.count >= 20
        }
        close(reader)
        let complete = received.prefix(through: received.lastIndex(of: UInt8(ascii: "\n"))!)
        let lines = Lines(Data(complete))
        #expect(lines.invalid.isEmpty, "\(lines.invalid)")
        #expect(lines.seqs == Array(1...lines.seqs.count))

        try await Self.wait("the drops in the metrics", timeout: .seconds(15)) { (scene.droppedInMetrics ?? 0) > 0 }
        #expect(kill(agent.pid, 0) == 0, "still running")
        let status = try await agent.stop(timeout: .seconds(8))
        #expect(status == 0, "exit \(String(describing: status)): \(agent.stderr)")
        #expect(agent.stderr.isEmpty)
    }

    @Test("Standard output's reader stops reading (a full pipe): SIGTERM still ends the agent with exit 0, lines whole")
    func readerStopsReading() async throws {
        let scene = try Scene()
        let agent = try scene.configure(endpoints: 100, events: "{ output: stdout, probes: all }")
        let reader = try agent.startOnPipe()
        defer { close(reader) }
        // 100 lines a second of 450 bytes fill the pipe's 64 KiB in about 1.5 s; the writer thread then blocks, which
        // the kernel shows as the thread's wait channel. Waited for, not slept on: a loaded machine probes slower.
        try await Self.wait("the event writer blocked on the full pipe", timeout: .seconds(30)) {
            Self.threadsWaiting(in: "pipe_write", pid: agent.pid) > 0
        }
        #expect(kill(agent.pid, 0) == 0, "still running")
        let started = ContinuousClock.now
        // Probes in flight get 2 s, the writer 2 s more to drain; it is left blocked and the process exits.
        let status = try await agent.stop(timeout: .seconds(10))
        print(
            """
            with a reader that stopped reading, the agent exited \(String(describing: status)) \(ContinuousClock.now - started) \
            after SIGTERM
            """
        )
        #expect(status == 0, "exit \(String(describing: status)): \(agent.stderr)")
        _ = fcntl(reader, F_SETFL, O_NONBLOCK)
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let count = read(reader, &buffer, buffer.count), count > 0 { received.append(contentsOf: buffer[..<count]) }
        // Lines shorter than PIPE_BUF go into a pipe whole: no line is cut, even at the point the pipe filled.
        let lines = Lines(received)
        // A pipe is 16 pages; a line goes whole into the last page or starts the next, so each page is full to
        // within one line.
        let longest = received.split(separator: UInt8(ascii: "\n")).map(\.count).max() ?? 0
        #expect(received.count >= 16 * (4096 - longest - 1), "\(received.count) bytes, longest line \(longest)")
        #expect(lines.invalid.isEmpty, "\(lines.invalid.prefix(3))")
        #expect(lines.seqs == Array(1...lines.seqs.count))
    }

    @Test(
        "A file system that fills up: no partial line, drops counted and reported once space returns, writing resumes",
        .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullFileSystem() async throws {
        let scene = try Scene()
        // 48 KiB left for events: a few seconds of 30 lines a second.
        let (mountPoint, filler) = try scene.mountFullFileSystem(free: 48 << 10)
        let events = "\(mountPoint)/events.jsonl"
        let agent = try scene.configure(endpoints: 30, events: "{ output: \(events), probes: all }")
        try agent.start()

        try await Self.wait("lines dropped for a full disk") { (scene.droppedInMetrics ?? 0) >= 30 }
        let full = Lines(file: events)
        #expect(full.invalid.isEmpty, "a partial line in the full file: \(full.invalid.prefix(3))")
        #expect(full.seqs == Array(1...full.seqs.count))
        #expect(kill(agent.pid, 0) == 0, "still running")

        // Space returns: an events.dropped line counts what was lost, then lines flow again.
        #expect(unlink(filler) == 0)
        try await Self.wait("events.dropped, then more lines") {
            let lines = Lines(file: events)
            guard let report = lines.events.lastIndex(where: { $0["event"] as? String == "events.dropped" }) else { return false }
            return lines.events.count - report > 30
        }
        let status = try await agent.stop(timeout: .seconds(8))
        #expect(status == 0, "exit \(String(describing: status)): \(agent.stderr)")

        let lines = Lines(file: events)
        #expect(lines.invalid.isEmpty, "\(lines.invalid.prefix(3))")
        #expect(lines.seqs == Array(1...lines.seqs.count), "seq counts on with no gap: the drops are counted, not skipped")
        let reports = lines.of("events.dropped")
        #expect(reports.allSatisfy { $0["reason"] as? String == "write_failed" && $0["error"] as? String == "ENOSPC" }, "\(reports)")
        let reported = reports.compactMap { $0["count"] as? Int }.reduce(0, +)
        let stopping = try #require(lines.of("agent.stopping").first, "agent.stopping was written")
        print("full file system: \(lines.events.count) lines kept, \(reported) dropped in \(reports.count) events.dropped lines")
        #expect(reported > 0 && stopping["events_dropped"] as? Int == reported, "every drop reported once: \(reported) vs \(stopping)")
        let afterRecovery = lines.events.drop { $0["event"] as? String != "events.dropped" }
        #expect(afterRecovery.contains { $0["event"] as? String == "probe.completed" }, "writing resumed")
    }

    @Test(
        "Rotation by size on a file system that fills up: whole lines in both files, seq on across the rotation, recovery",
        .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func rotationOnFullFileSystem() async throws {
        let scene = try Scene()
        // 40 KiB free and files of 32 KiB: the second file fills the disk before it is due to rotate.
        let (mountPoint, filler) = try scene.mountFullFileSystem(free: 40 << 10)
        let events = "\(mountPoint)/events.jsonl"
        let rotated = events + ".1"
        let agent = try scene.configure(endpoints: 30, events: "{ output: \(events), probes: all, max_size: 32KiB, keep: 1 }")
        try agent.start()
        try await Self.wait("lines dropped for a full disk") { (scene.droppedInMetrics ?? 0) >= 30 }
        #expect(kill(agent.pid, 0) == 0, "still running")
        let lastSeqWhileFull = [rotated, events].flatMap { Lines(file: $0).seqs }.max() ?? 0
        #expect(unlink(filler) == 0)
        // 216 KiB now free: rotation keeps the two files under 64 KiB, so the disk does not fill again. Wait
        // for the report, then for two rotations (the rotated file starts after the disk was full).
        var reports: [[String: Any]] = []
        try await Self.wait("events.dropped and two rotations after the space came back") {
            if reports.isEmpty { reports = Lines(file: events).of("events.dropped") }
            return !reports.isEmpty && (Lines(file: rotated).seqs.first ?? 0) > lastSeqWhileFull
        }
        #expect(reports.allSatisfy { $0["reason"] as? String == "write_failed" && $0["error"] as? String == "ENOSPC" }, "\(reports)")
        let status = try await agent.stop()
        #expect(status == 0, "exit \(String(describing: status)): \(agent.stderr)")
        let parts = [Lines(file: rotated), Lines(file: events)]
        for (name, part) in zip(["rotated", "current"], parts) {
            #expect(part.invalid.isEmpty, "\(name): \(part.invalid.prefix(3))")
        }
        let seqs = parts.flatMap(\.seqs)
        #expect(seqs == Array(seqs.first!...seqs.last!), "seq on across the rotation")
        for path in [events, rotated] {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
            #expect(size > 0 && size <= 32 << 10, "\(path): \(size) bytes")
        }
        let stopping = try #require(parts[1].of("agent.stopping").first)
        print(
            """
            rotation on a full file system: \(stopping["events_dropped"] ?? "?") dropped, seq \(seqs.first!)–\(seqs.last!) kept in \
            two files
            """
        )
        #expect((stopping["events_dropped"] as? Int ?? 0) > 0)
    }

    @Test("The events file renamed (logrotate), then deleted, under the running agent: no line lost or cut, SIGUSR1 reopens")
    func renamedAndDeleted() async throws {
        let scene = try Scene()
        let events = "\(scene.directory)/events.jsonl"
        let rotated = events + ".1"
        let agent = try scene.configure(endpoints: 100, events: "{ output: \(events), probes: all }")
        try agent.start()
        try await Self.wait("100 lines") { Lines(file: events).events.count >= 100 }

        // logrotate's default: rename, then SIGUSR1. Until the signal, lines go on into the renamed file.
        #expect(rename(events, rotated) == 0)
        let renamedSize = Lines(file: rotated).events.count
        try await Self.wait("lines into the renamed file") { Lines(file: rotated).events.count > renamedSize }
        #expect(kill(agent.pid, SIGUSR1) == 0)
        try await Self.wait("lines in a new file after SIGUSR1") { Lines(file: events).events.count >= 50 }

        // Deleted (not renamed): the agent notices before its next line and starts the file again, no signal.
        let deleted = open(events, O_RDONLY)
        #expect(deleted >= 0)
        defer { close(deleted) }
        #expect(unlink(events) == 0)
        try await Self.wait("a new file after the deletion, without SIGUSR1") { Lines(file: events).events.count >= 50 }
        let status = try await agent.stop(timeout: .seconds(8))
        #expect(status == 0, "exit \(String(describing: status)): \(agent.stderr)")

        let deletedLines = Lines(FileHandle(fileDescriptor: deleted).readDataToEndOfFile())
        let parts = [Lines(file: rotated), deletedLines, Lines(file: events)]
        for (name, part) in zip(["renamed", "deleted", "new"], parts) {
            #expect(part.invalid.isEmpty, "\(name): \(part.invalid.prefix(3))")
            #expect(!part.events.isEmpty, "\(name) file is empty")
        }
        let seqs = parts.flatMap(\.seqs)
        print("renamed, deleted, new: \(parts.map(\.events.count)) lines")
        #expect(seqs == Array(1...seqs.count), "every line once, in order, across the three files")
        #expect(parts[2].of("agent.stopping").first?["events_dropped"] as? Int == 0)
    }

    @Test("SIGUSR1 400 times (200 at once, 200 spread over a second with renames) during heavy writing: every line whole, in order")
    func reopenStorm() async throws {
        let scene = try Scene()
        let events = "\(scene.directory)/events.jsonl"
        let agent = try scene.configure(endpoints: 200, events: "{ output: \(events), probes: all }")
        try agent.start()
        try await Self.wait("the first pass of 200 probes") { Lines(file: events).of("probe.completed").count >= 200 }
        let descriptorsBefore = Self.descriptorCount(agent.pid)

        for _ in 0..<200 { kill(agent.pid, SIGUSR1) }
        var renamed: [String] = []
        for index in 0..<200 {
            if index % 20 == 0 {
                let name = "\(events).\(renamed.count + 1)"
                if rename(events, name) == 0 { renamed.append(name) }
            }
            kill(agent.pid, SIGUSR1)
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .seconds(2))
        #expect(kill(agent.pid, 0) == 0, "still running")
        let descriptorsAfter = Self.descriptorCount(agent.pid)
        let status = try await agent.stop(timeout: .seconds(8))
        #expect(status == 0, "exit \(String(describing: status)): \(agent.stderr)")

        let parts = (renamed + [events]).map { Lines(file: $0) }
        for (name, part) in zip(renamed + [events], parts) {
            #expect(part.invalid.isEmpty, "\(name): \(part.invalid.prefix(3))")
            #expect(part.seqs == part.seqs.sorted(), "\(name): lines out of order")
        }
        let seqs = parts.flatMap(\.seqs)
        print(
            """
            reopen storm: \(seqs.count) lines in \(parts.count) files (\(parts.map(\.events.count))); descriptors \
            \(descriptorsBefore) before, \(descriptorsAfter) after
            """
        )
        #expect(seqs == Array(1...seqs.count), "every line once, in order, across the files")
        #expect(parts.last?.of("agent.stopping").first?["events_dropped"] as? Int == 0)
        // Each reopen closes the file it replaces. (The count moves with probes in flight: refused at once here.)
        #expect(
            abs(descriptorsAfter - descriptorsBefore) <= 3, "descriptors \(descriptorsBefore) before the storm, \(descriptorsAfter) after")
    }
}
