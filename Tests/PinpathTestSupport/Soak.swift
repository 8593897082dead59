import Foundation

/// The soak (issue 6): `pinpath run`, as a child process, for a given time against a mix of healthy and
/// hostile endpoints on 127.0.0.1, sampled from `/proc` every second (descriptors, resident memory,
/// threads) while its events are counted from its standard output.
///
/// - Healthy: `openssl s_server` with the `ip` leaf, probed pinned, unpinned, with pins it does not match
///   (`policy_rejected`, and `pin.failure` reports) and with a body expectation it does not meet; httpbin's
///   `/get` and `/status/503` when httpbin is installed. Every 1 s, timeout 1 s.
/// - Hostile: every server of ``HostileAgentScene``. Every 2 s, timeout 1 s.
/// - The configuration is reloaded (SIGHUP, unchanged file) every `reloadEvery`; the metrics textfile is on.
/// - When run as root, the agent runs as `nobody` (`setpriv`), as production runs it unprivileged.
/// - At the end, SIGTERM: the agent must exit 0 and write `agent.stopping`.
///
/// Nothing here asserts: ``run(_:log:)`` returns a ``SoakReport`` that the caller judges or prints.
public enum Soak {
    public struct Options: Sendable {
        /// How long the agent runs.
        public var duration: Duration
        /// The `pinpath` binary.
        public var pinpath: String
        /// How often `/proc` is read.
        public var sampleEvery: Duration = .seconds(1)
        /// How much time one row of the table covers.
        public var reportEvery: Duration
        /// Warm-up lasts at least this long…
        public var warmUpAtLeast: Duration = .seconds(30)
        /// …and until every endpoint completed this many probes.
        public var warmUpProbesPerEndpoint = 3
        /// SIGHUP this often (`nil`: never).
        public var reloadEvery: Duration? = .seconds(30)
        /// Run the agent as `nobody` when this process is root.
        public var unprivileged = true

        /// - Parameters:
        ///   - minutes: the run's length.
        ///   - pinpath: the binary; by default the one built next to the running test bundle or executable.
        public init(minutes: Double, pinpath: String = Shell.pinpath) {
            duration = .milliseconds(Int((minutes * 60_000).rounded()))
            self.pinpath = pinpath
            // About 30 rows, none shorter than 10 s.
            reportEvery = .seconds(max(10, Int((minutes * 60 / 30).rounded())))
        }
    }

    /// Runs the soak; `log` receives progress and each row of the table as it completes.
    /// - Throws: when the scene cannot be set up (a server that does not start, the binary missing).
    public static func run(_ options: Options, log: @escaping @Sendable (String) -> Void) async throws -> SoakReport {
        guard FileManager.default.isExecutableFile(atPath: options.pinpath) else {
            throw ShellError(description: "\(options.pinpath) is not an executable; build it (swift build --product pinpath) or name it")
        }
        let pki = TestPKI.shared
        let directory = "\(pki.directory)/soak-\(UUID().uuidString)"
        let metricsDirectory = "\(directory)/metrics"
        try FileManager.default.createDirectory(atPath: metricsDirectory, withIntermediateDirectories: true)
        // The agent may run as nobody: it reads the configuration and writes the metrics here.
        chmod(directory, 0o755)
        chmod(metricsDirectory, 0o777)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let scene = try SoakScene(pki: pki, directory: directory, metrics: "\(metricsDirectory)/pinpath.prom")
        defer { scene.stop() }
        let configuration = "\(directory)/pinpath.yaml"
        try scene.configurationYAML.write(toFile: configuration, atomically: true, encoding: .utf8)
        log(
            """
            soak: \(scene.expected.count) endpoints (\(scene.healthyCount) healthy, \(scene.expected.count - scene.healthyCount) \
            hostile), \(options.duration), agent \(options.pinpath)
            """
        )

        var output: [Int32] = [0, 0]
        guard pipe(&output) == 0 else { throw ShellError(description: "pipe: \(errno)") }
        // Only the write end goes to the agent, as its standard output (dup2 clears the flag there).
        for end in output { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let stderrPath = "\(directory)/agent.stderr"
        let stderrFile = open(stderrPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        // The agent's /proc/PID/fd should hold its own descriptors only, not whatever this process (a test
        // runner, the servers) has open.
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let fd = Int32(entry), fd > 2, fd != output[1] && fd != stderrFile { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        }
        let asNobody = options.unprivileged && getuid() == 0
        let command =
            (asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] : [])
            + [options.pinpath, "run", "--config", configuration]
        let pid: pid_t
        do {
            pid = try Shell.spawn(command, stdout: output[1], stderr: stderrFile)
        } catch {
            close(output[0])
            close(output[1])
            close(stderrFile)
            throw error
        }
        close(output[1])
        close(stderrFile)
        let tally = EventTally(reading: output[0])
        var exit: SoakReport.Exit?
        defer { if exit == nil { Shell.kill(pid) } }

        let started = ContinuousClock.now
        var samples: [ProcessSample] = []
        var warmUpEnd: Duration?
        var reloads = 0
        var nextReload = options.reloadEvery.map { started + $0 }
        var nextSample = started
        var row = SoakReport.Row.Builder(start: .zero)
        log(SoakReport.tableHeader)
        while ContinuousClock.now - started < options.duration {
            try? await Task.sleep(until: nextSample, tolerance: .milliseconds(10))
            nextSample += options.sampleEvery
            let elapsed = ContinuousClock.now - started
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                exit = .early(status: status, after: elapsed)
                log("soak: the agent ended on its own after \(SoakReport.seconds(elapsed)): \(exit!)")
                break
            }
            let counts = tally.snapshot
            guard let sample = ProcessSample.read(pid: pid, elapsed: elapsed, probes: counts.probeCount) else { continue }
            samples.append(sample)
            if warmUpEnd == nil, elapsed >= options.warmUpAtLeast,
                scene.expected.keys.allSatisfy({ counts.probes[$0]?.values.reduce(0, +) ?? 0 >= options.warmUpProbesPerEndpoint })
            {
                warmUpEnd = elapsed
                log(
                    """
                    soak: warm-up over at \(SoakReport.seconds(elapsed)) (every endpoint probed \
                    \(options.warmUpProbesPerEndpoint)+ times, 30 s at least)
                    """
                )
            }
            // None in the last 10 s: each reload must have finished (config.reloaded) before SIGTERM.
            if let reloadAt = nextReload, ContinuousClock.now >= reloadAt, elapsed + .seconds(10) < options.duration {
                kill(pid, SIGHUP)
                reloads += 1
                nextReload = reloadAt + (options.reloadEvery ?? .zero)
            }
            row.add(sample)
            if elapsed - row.start >= options.reportEvery {
                log(row.build().line)
                row = SoakReport.Row.Builder(start: elapsed)
            }
        }
        if !row.isEmpty { log(row.build().line) }

        if exit == nil {
            let stopping = ContinuousClock.now
            let code = try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(10))
            exit = code.map { .stopped(code: $0, after: ContinuousClock.now - stopping) } ?? .killedAfterTimeout
        }
        _ = await tally.waitForEnd(timeout: .seconds(5))
        let stderrText = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        return SoakReport(
            options: options, samples: samples, warmUpEnd: warmUpEnd, counts: tally.snapshot, expected: scene.expected, reloads: reloads,
            exit: exit!, ranAsNobody: asNobody, agentStderr: String(stderrText.suffix(4000)))
    }
}
