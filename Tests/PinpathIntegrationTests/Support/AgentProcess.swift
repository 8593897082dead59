import Foundation
import PinpathTestSupport

/// The built `pinpath run`, started by a test on a configuration file of its own; killed when the value goes
/// away unless the test stopped it, and the directory it made removed.
final class AgentProcess {
    /// Holds the configuration and `agent.stderr`.
    let directory: String
    let configurationPath: String
    private(set) var pid: pid_t = 0
    private var running = false
    private let ownsDirectory: Bool

    /// Writes `configuration` to `pinpath.yaml` in `directory`, or in a new directory of its own when `nil`.
    init(configuration: String, directory: String? = nil) throws {
        ownsDirectory = directory == nil
        self.directory = directory ?? "\(TestPKI.shared.directory)/agent-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: self.directory, withIntermediateDirectories: true)
        configurationPath = "\(self.directory)/pinpath.yaml"
        try configuration.write(toFile: configurationPath, atomically: true, encoding: .utf8)
    }

    deinit {
        if running { Shell.kill(pid) }
        if ownsDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Starts it with standard output to `stdout` (/dev/null when `nil`) and standard error to `agent.stderr`.
    func start(stdout: Int32? = nil) throws {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let stderr = open("\(directory)/agent.stderr", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(stderr) }
        pid = try Shell.spawn([Shell.pinpath, "run", "--config", configurationPath], stdout: stdout ?? devNull, stderr: stderr)
        running = true
    }

    /// Starts it writing to a pipe; returns the pipe's reading end, which the caller closes.
    func startOnPipe() throws -> Int32 {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw ShellError(description: "pipe: \(errno)") }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)  // the agent must not hold the reader's end itself
        defer { close(ends[1]) }
        do {
            try start(stdout: ends[1])
        } catch {
            close(ends[0])
            throw error
        }
        return ends[0]
    }

    /// SIGTERM; the exit status, or `nil` if it had to be killed after `timeout`.
    func stop(timeout: Duration = .seconds(8)) async throws -> Int32? {
        running = false
        return try await Shell.stop(pid, signal: SIGTERM, timeout: timeout)
    }

    /// What it wrote on standard error.
    var stderr: String { (try? String(contentsOfFile: "\(directory)/agent.stderr", encoding: .utf8)) ?? "" }
}
