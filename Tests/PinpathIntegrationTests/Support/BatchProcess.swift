import Foundation
import PinpathTestSupport

/// One long-running `ip -force -batch -` inside a namespace: every line written to it runs as soon as it
/// arrives, without the cost of starting a process per command. Its standard input is a socket, so that a
/// write after it died fails with EPIPE (MSG_NOSIGNAL) instead of killing the test with SIGPIPE.
/// `@unchecked Sendable`: handed to one driver thread, which alone sends; `finish()` runs after that thread ended.
final class BatchProcess: @unchecked Sendable {
    let pid: pid_t
    private let input: Int32
    private let errorFile: String
    private var exitStatus: Int32?

    init(namespace: String, errorFile: String) throws {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw ShellError(description: "socketpair: \(String(cString: strerror(errno)))")
        }
        let errors = open(errorFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let devNull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer {
            close(pair[1])
            close(errors)
            close(devNull)
        }
        do {
            pid = try Shell.spawn(["ip", "-n", namespace, "-force", "-batch", "-"], stdin: pair[1], stdout: devNull, stderr: errors)
        } catch {
            close(pair[0])
            throw error
        }
        input = pair[0]
        self.errorFile = errorFile
    }

    deinit {
        if exitStatus == nil {
            close(input)
            Shell.kill(pid)
        }
    }

    /// Writes `lines` (each ending in a newline); blocks while `ip` is behind. Returns `false` once `ip` is gone.
    @discardableResult
    func send(_ lines: String) -> Bool {
        var bytes = Array(lines.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes {
                Glibc.send(input, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Closes its input, waits for it to run what it was sent and exit, and counts the commands the kernel
    /// refused (`ip -force` prints "Command failed -:LINE" for each and goes on).
    func finish() -> (status: Int32, failures: Int) {
        close(input)
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let status = (raw >> 8) & 0xff
        exitStatus = status
        let text = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
        return (status, text.split(separator: "\n").filter { $0.hasPrefix("Command failed") }.count)
    }
}
