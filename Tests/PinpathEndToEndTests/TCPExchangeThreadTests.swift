import Foundation
import PinpathTestSupport
import Testing

/// strace, which counts the threads a process starts (scripts/packages.sh installs it for the tests).
let straceProgram = ["/usr/bin/strace", "/bin/strace"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// Runs `arguments` under strace and counts the threads the process started (its clone and clone3 calls, each
/// one thread), the trace written to `trace`.
func threadStarts(running arguments: [String], trace: String) throws -> (result: Shell.Result, threads: Int) {
    let result = try Shell.run(
        [straceProgram!, "-f", "-qq", "-e", "trace=clone,clone3", "-e", "signal=none", "-o", trace] + arguments)
    let calls = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").filter {
        $0.contains("clone(") || $0.contains("clone3(")
    }
    return (result, calls.count)
}

/// `tcp://` exchanges run on the request core's own thread: `pinpath run --once` with N of them starts the
/// same few threads as with one (it started one thread per exchange before issue 29: N + 7 for N probes).
@Suite("tcp:// exchanges start no threads", .enabled(if: straceProgram != nil, "strace is not installed"))
struct TCPExchangeThreadTests {
    /// Threads `pinpath run --once` starts for `count` tcp probes that send and read an answer, counted by
    /// strace (clone and clone3 calls, each one thread); and how many of the probes succeeded.
    func threadsStarted(probes count: Int, servers: [MailServer], in directory: TemporaryDirectory) throws -> (threads: Int, succeeded: Int)
    {
        // Spread over several servers: libcurl keeps at most 64 connections to one host and port.
        let endpoints = (0..<count).map { index in
            let port = servers[index % servers.count].port
            return "  - { name: t\(index), url: \"tcp://127.0.0.1:\(port)\", send: \"PING\\r\\n\", expect: { banner: \"+PONG\" } }"
        }
        let configuration = directory.file("tcp-\(count).yaml")
        try ("endpoints:\n" + endpoints.joined(separator: "\n") + "\n").write(toFile: configuration, atomically: true, encoding: .utf8)
        let (result, threads) = try threadStarts(
            running: [Shell.pinpath, "run", "--once", "--config", configuration], trace: directory.file("trace-\(count)"))
        #expect(result.status == 0, "\(result.stderr)")
        let succeeded = result.stdout.split(separator: "\n").filter {
            $0.contains("\"event\":\"probe.completed\"") && $0.contains("\"outcome\":\"success\"")
        }
        return (threads, succeeded.count)
    }

    @Test("400 tcp probes with an exchange start no more threads than one does, and each reads its answer")
    func threadsDoNotGrowWithProbes() throws {
        let directory = try TemporaryDirectory()
        let servers = try (0..<8).map { _ in try MailServer(.tcp, .answer, directory: directory.path) }
        defer { for server in servers { server.stop() } }
        let one = try threadsStarted(probes: 1, servers: servers, in: directory)
        let many = try threadsStarted(probes: 400, servers: servers, in: directory)
        #expect(one.succeeded == 1 && many.succeeded == 400)
        #expect(one.threads > 0, "strace saw no thread start at all: it did not trace the agent")
        // A margin of 4 for Swift's concurrency pool, which may start a worker more under load; a thread per
        // exchange would be 400 more.
        #expect(many.threads <= one.threads + 4, "1 tcp probe started \(one.threads) threads, 400 started \(many.threads)")
    }
}
