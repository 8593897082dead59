import ArgumentParser
import Glibc
import PinpathAgent
import PinpathHTTP
import PinpathSupport

/// A failure to report as `pinpath: error: …` on standard error with a sysexits code, never a stack trace.
/// A command's `run()` and `validate()` throw it; ``Pinpath/main()`` reports it.
enum CommandFailure: Error {
    case usage(String)
    case data(String)
    case unavailable(String)
    case output(String)
    /// A command's own documented outcome (`request`: 1 pins, 2 TLS, 3 connection, 4 not reachable, 5 status).
    case outcome(Int32, String)
    /// A request that failed, with its category (`tls_invalid`), which the message starts with.
    case request(Int32, category: FailureCategory, String)

    var exitCode: ExitCode {
        switch self {
        case .usage: return ExitCode(64)  // EX_USAGE
        case .data: return ExitCode(65)  // EX_DATAERR
        case .unavailable: return ExitCode(69)  // EX_UNAVAILABLE
        case .output: return ExitCode(74)  // EX_IOERR
        case .outcome(let code, _), .request(let code, _, _): return ExitCode(code)
        }
    }

    var message: String {
        switch self {
        case .usage(let message), .data(let message), .unavailable(let message), .output(let message), .outcome(_, let message):
            return message
        case .request(_, let category, let message): return "\(category): \(message)"
        }
    }

    /// The message without the category a request failure's line starts with.
    var detail: String {
        if case .request(_, _, let message) = self { return message }
        return message
    }

    /// What kind of failure, for scripts: the request's category, or the command line's own.
    var category: FailureCategory {
        switch self {
        case .usage: .usage
        case .data: .data
        case .unavailable: .unavailable
        case .output: .output
        case .outcome: .failed
        case .request(_, let category, _): category
        }
    }

    /// Writes the one line on standard error (and, with `--json`, the error object on standard output when the
    /// command printed none) and returns the exit code to leave with.
    func report() -> ExitCode {
        ScriptContract.writeErrorObject(category: category, message: detail, exitCode: exitCode.rawValue)
        try? LineOutput(descriptor: STDERR_FILENO).write(ScriptContract.errorLine(message))
        return exitCode
    }
}

/// Writes `text` on standard output; a failure to write is exit 74.
func writeOutput(_ text: String) throws(CommandFailure) {
    try writeOutput(Array(text.utf8))
}

/// Writes `bytes` on standard output; a failure to write is exit 74.
func writeOutput(_ bytes: [UInt8]) throws(CommandFailure) {
    do throws(OutputError) {
        try LineOutput().write(bytes)
        ScriptContract.noteOutputWritten()
    } catch {
        throw CommandFailure.output(error.description)
    }
}

/// Runs a command body, reporting a ``CommandFailure`` it throws as ``Pinpath/main()`` does, and ending with
/// its exit code.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CommandFailure {
        throw failure.report()
    }
}
