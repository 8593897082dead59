import Foundation

/// httpbin (PyPI `httpbin` 0.10.4) under gunicorn on 127.0.0.1, for tests against a real HTTP server;
/// stopped by its PID.
///
/// scripts/test installs it (`install_test_python` in scripts/packages.sh). Tests that need it use
/// `.enabled(if: HTTPBinServer.isAvailable, Comment(rawValue: HTTPBinServer.unavailableReason))`.
public final class HTTPBinServer: Sendable {
    /// `http://127.0.0.1:PORT/`.
    public let baseURL: URL
    /// The port gunicorn listens on.
    public let port: UInt16
    /// The gunicorn master's PID.
    public let pid: pid_t

    /// The Python interpreter that can import httpbin and gunicorn, or `nil`: `PINPATH_TEST_PYTHON` (the
    /// virtual environment scripts/test installs them into), else `python3` from `PATH`.
    public static let python: String? = {
        let candidate = ProcessInfo.processInfo.environment["PINPATH_TEST_PYTHON"] ?? "python3"
        guard let result = try? Shell.run(["/usr/bin/env", candidate, "-c", "import sys, httpbin, gunicorn; print(sys.executable)"]),
            result.status == 0
        else { return nil }
        let path = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        return path.isEmpty ? nil : path
    }()

    /// Whether httpbin and gunicorn can be started here.
    public static var isAvailable: Bool { python != nil }

    /// Why httpbin tests are skipped, printed by Swift Testing.
    public static let unavailableReason = "needs python3 with httpbin 0.10.4 and gunicorn (pip install httpbin==0.10.4 gunicorn)"

    /// Starts gunicorn with two workers and waits (up to 15 s) until it accepts connections.
    /// - Throws: ``ShellError`` when python is missing or the server did not come up; it is killed then.
    public init() throws {
        guard let python = Self.python else { throw ShellError(description: "httpbin is not installed: \(Self.unavailableReason)") }
        port = try TLSServer.freePort()
        baseURL = URL(string: "http://127.0.0.1:\(port)/")!
        // Its log goes nowhere: a chatty server must not block on a full pipe nobody reads.
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        pid = try Shell.spawn(
            [python, "-m", "gunicorn", "-b", "127.0.0.1:\(port)", "-w", "2", "httpbin:app"], stdout: devNull, stderr: devNull)
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let fd = try? TLSServer.connectLoopback(port: port) {
                close(fd)
                return
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                throw ShellError(description: "gunicorn exited (status \(status)) before listening on 127.0.0.1:\(port)")
            }
            usleep(50_000)
        }
        stop()
        throw ShellError(description: "httpbin did not listen on 127.0.0.1:\(port) within 15 s")
    }

    /// Stops the server: SIGINT is gunicorn's quick shutdown, which also ends its workers; SIGKILL after
    /// 5 s if it has not exited. Safe to call twice.
    public func stop() {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == 0 else { return }
        kill(pid, SIGINT)
        for _ in 0..<100 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(50_000)
        }
        Shell.kill(pid)
    }

    deinit { stop() }
}
