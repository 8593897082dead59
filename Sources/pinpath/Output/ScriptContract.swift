import Glibc
import PinpathHTTP
import PinpathSupport
import Synchronization

/// What scripts may rely on, whichever command they run and however it fails: with `--json`, exactly one JSON
/// object on standard output (the command's own, or `{"error":{"category":…,"message":…,"exit_code":N}}`),
/// even for a usage error ArgumentParser found before any command ran; on standard error, one line per error
/// unless `--verbose`.
///
/// The flags are read from the command line itself, not from a parsed command: a usage error leaves no parsed
/// command to ask, and its answer must follow the same contract.
enum ScriptContract {
    /// Whether `--json` was given (before any `--`).
    static let wantsJSON = flags.contains("--json")

    /// Whether `-v` or `--verbose` was given (before any `--`): errors then keep all their lines.
    static let isVerbose = flags.contains("-v") || flags.contains("--verbose")

    private static var flags: ArraySlice<String> {
        let arguments = CommandLine.arguments.dropFirst()
        return arguments.prefix { $0 != "--" }
    }

    private static let objectWritten = Atomic<Bool>(false)

    /// Notes that the command wrote its output on standard output, so that no error object follows it.
    static func noteOutputWritten() {
        objectWritten.store(true, ordering: .relaxed)
    }

    /// Writes the error object on standard output when `--json` was given and the command wrote nothing yet.
    static func writeErrorObject(category: FailureCategory, message: String, exitCode: Int32) {
        guard wantsJSON, !objectWritten.exchange(true, ordering: .relaxed) else { return }
        let object = JSONValue.object([("error", errorFields(category: category, message: message, exitCode: exitCode))])
        try? LineOutput().write(object.encoded() + "\n")
    }

    /// `{"category":…,"message":…,"exit_code":N}`: the `error` member of every `--json` failure.
    static func errorFields(category: FailureCategory, message: String, exitCode: Int32) -> JSONValue {
        .object([("category", .string(category.rawValue)), ("message", .string(message)), ("exit_code", .int(Int(exitCode)))])
    }

    /// The one line standard error gets for `message`: its lines joined with "; " unless `--verbose`, escaped
    /// (messages quote servers and files).
    static func errorLine(_ message: String) -> String {
        if isVerbose { return "pinpath: error: \(UntrustedText.escaped(message, keepingNewlines: true))\n" }
        let lines = message.split(separator: "\n").map { String($0.drop { $0 == " " || $0 == "\t" }) }.filter { !$0.isEmpty }
        return "pinpath: error: \(UntrustedText.escaped(lines.joined(separator: "; ")))\n"
    }
}
