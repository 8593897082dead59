import ArgumentParser
import Glibc
import PinpathAgent
import PinpathSupport

/// A failure to report as `pinpath: error: …` on standard error with a sysexits code, never a stack trace.
enum CommandFailure: Error {
    case usage(String)
    case data(String)
    case unavailable(String)
    case output(String)
    /// A command's own documented outcome (`request`: 1 pins, 2 TLS, 3 connection, 4 not reachable, 5 status).
    case outcome(Int32, String)

    var exitCode: ExitCode {
        switch self {
        case .usage: return ExitCode(64)  // EX_USAGE
        case .data: return ExitCode(65)  // EX_DATAERR
        case .unavailable: return ExitCode(69)  // EX_UNAVAILABLE
        case .output: return ExitCode(74)  // EX_IOERR
        case .outcome(let code, _): return ExitCode(code)
        }
    }

    var message: String {
        switch self {
        case .usage(let message), .data(let message), .unavailable(let message), .output(let message), .outcome(_, let message):
            return message
        }
    }
}

/// Runs a command body, printing a `CommandFailure` as one line on stderr and exiting with its code.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CommandFailure {
        // Messages may quote the server (its certificates' names, its TLS alerts).
        let message = TerminalText.escaped(failure.message, keepingNewlines: true)
        try? LineOutput(descriptor: STDERR_FILENO).write("pinpath: error: \(message)\n")
        throw failure.exitCode
    }
}
