import Foundation

/// Runs programs for the tests: `ip` and `openssl` to set the scene, and the `pinpath` binary itself.
public enum Shell {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// The `pinpath` binary SwiftPM built next to the running test bundle.
    public static let pinpath: String = {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let candidates = [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent("pinpath").path }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[0]
    }()

    /// Runs a program to completion and returns what it printed.
    @discardableResult
    public static func run(_ arguments: [String], input: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path(of: arguments[0]))
        process.arguments = Array(arguments.dropFirst())
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let inputPipe = Pipe()
        if input != nil { process.standardInput = inputPipe }
        try process.run()
        if let input {
            inputPipe.fileHandleForWriting.write(Data(input.utf8))
            try inputPipe.fileHandleForWriting.close()
        }
        // Read both before waiting, and at the same time: a program that fills one pipe while the other is
        // read would block for ever (20,000 configuration problems on stderr did).
        let collected = CollectedOutput()
        let reader = Thread {
            collected.set(err.fileHandleForReading.readDataToEndOfFile())
        }
        reader.start()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = collected.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// What a reader thread read, handed to the waiting thread once. `@unchecked Sendable`: written once before
    /// the semaphore is signalled, read only after waiting for it.
    private final class CollectedOutput: @unchecked Sendable {
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)

        func set(_ value: Data) {
            data = value
            done.signal()
        }

        func wait() -> Data {
            done.wait()
            return data
        }
    }

    /// Runs a program and fails the test's setup if it does not exit 0.
    @discardableResult
    public static func check(_ arguments: [String], input: String? = nil) throws -> String {
        let result = try run(arguments, input: input)
        guard result.status == 0 else {
            throw ShellError(description: "\(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return result.stdout
    }

    /// Starts a program in the background with posix_spawn (Foundation's `Process.waitUntilExit` can hang
    /// off the main thread) and returns its PID, for `kill`. Descriptors given become the child's standard
    /// input, output and error.
    public static func spawn(
        _ arguments: [String], stdin: Int32? = nil, stdout: Int32? = nil, stderr: Int32? = nil
    ) throws -> pid_t {
        let executable = try path(of: arguments[0])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin { posix_spawn_file_actions_adddup2(&actions, stdin, 0) }
        if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, 2) }
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        // The child starts with no signal blocked and every handler at its default, as from a shell: it
        // would otherwise inherit the test thread's mask, where SIGINT and SIGTERM are blocked, and ignore them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        guard result == 0 else { throw ShellError(description: "cannot start \(executable): \(String(cString: strerror(result)))") }
        return pid
    }

    /// Starts a server that writes the port it listens on to `portFile` (atomically, by rename), with its
    /// output discarded, and waits up to 10 s for the port; kills it and throws, naming `what`, if none came.
    public static func spawnServer(_ arguments: [String], portFile: String, what: String) throws -> (pid: pid_t, port: UInt16) {
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let pid = try spawn(arguments, stdout: devNull, stderr: devNull)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
                let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return (pid, port)
            }
            usleep(20_000)
        }
        kill(pid)
        throw ShellError(description: "\(what) did not start")
    }

    /// Kills a spawned program unless it has already exited, and reaps it. Safe to call twice.
    public static func stopIfRunning(_ pid: pid_t) {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == 0 { kill(pid) }
    }

    /// Kills a spawned program and reaps it.
    public static func kill(_ pid: pid_t) {
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
    }

    /// Sends `signal` and waits up to `timeout` for the program to exit; returns its exit status, or `nil`
    /// (after killing it) if it did not exit in time.
    public static func stop(_ pid: pid_t, signal: Int32, timeout: Duration) async throws -> Int32? {
        _ = Glibc.kill(pid, signal)
        let deadline = ContinuousClock.now + timeout
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, WNOHANG) == pid {
                return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            }
            // Checked once more after the deadline: a test task resumed late by a busy pool still sees an
            // exit that came in time.
            if ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        kill(pid)
        return nil
    }

    public static func path(of program: String) throws -> String {
        if program.hasPrefix("/") { return program }
        for directory in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        where FileManager.default.isExecutableFile(atPath: "\(directory)/\(program)") {
            return "\(directory)/\(program)"
        }
        throw ShellError(description: "\(program) is not installed")
    }
}

/// A test's scene could not be set: names the command and what it printed.
public struct ShellError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}
