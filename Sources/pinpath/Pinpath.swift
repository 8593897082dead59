import ArgumentParser
import Glibc
import PinpathHTTP
import PinpathSecurity
import PinpathSupport

@main
struct Pinpath: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinpath",
        abstract: "Network reachability and TLS security-policy monitoring for Linux.",
        discussion: """
            Exit codes: 0 success, 64 usage error, 65 unreadable input (pins, chains), 69 netlink (or another \
            needed service) unavailable, 74 output error, 78 invalid configuration. `run`, `audit`, `verify` and \
            `request` have their own codes, listed in their help.
            """,
        // `pinpath 0.1.0 (git abc1234)`: the commit says which build a report came from.
        version: "pinpath \(PinpathVersion.description)",
        subcommands: [
            RunCommand.self, CheckConfigCommand.self, StatusCommand.self, WatchCommand.self, RequestCommand.self,
            AuditCommand.self, VerifyCommand.self, PinsCommand.self, ModulesCommand.self,
        ]
    )

    /// ArgumentParser's `main`, except that every failure is one `pinpath: error: …` line with its exit code:
    /// pinpath's own (a refused value or option, a ``CommandFailure`` from `run()`) and ArgumentParser's (an
    /// unknown option, a missing argument), which get a pointer to `--help` instead of the usage block, or
    /// "did you mean" for a mistyped subcommand. With `--json`, the failure is also the one JSON object on
    /// standard output (``ScriptContract``).
    ///
    /// On the main actor, so that parsing runs on the main thread: what ends at parsing (`--version`, `--help`,
    /// a usage error) starts no worker thread; a command's `run()`, not isolated, runs on the runtime's threads as before.
    @MainActor
    static func main() async {
        // Before any OpenSSL use: the process may exit while a task or libcurl's thread is still inside OpenSSL.
        OpenSSLRuntime.initialiseWithoutExitCleanup()
        do {
            // The synchronous parse is the same parse: no option has an asynchronous custom completion.
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            exit(withError: failure.report())
        } catch {
            if let refusal = ArgumentRefusal.recorded { exit(withError: refusal.report()) }
            let code = exitCode(for: error)
            let text = message(for: error)
            // --help, --version and a command's exit code after its own output are not failures to word:
            // ArgumentParser prints what they need.
            guard code != .success, !(error is ExitCode), !text.isEmpty else { exit(withError: error) }
            let line = text.split(separator: "\n").first.map { $0.hasPrefix("Error: ") ? String($0.dropFirst(7)) : String($0) } ?? text
            guard code == .validationFailure else { exit(withError: CommandFailure.outcome(code.rawValue, line).report()) }
            let wording = Self.unknownCommand().map(Self.unknownCommandMessage) ?? "\(line) (see '\(Self.invokedCommand()) --help')"
            exit(withError: CommandFailure.usage(wording).report())
        }
    }

    /// The first argument when it names no subcommand and is no option (`pinpath reqest …`), else nil.
    static func unknownCommand() -> String? {
        guard let first = CommandLine.arguments.dropFirst().first, !first.hasPrefix("-") else { return nil }
        let names = configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"]
        return names.contains(first) ? nil : first
    }

    /// `unknown command "reqest"; did you mean "request"? (see 'pinpath --help')`: the closest subcommand by
    /// edit distance, when one is close enough to be a typo.
    static func unknownCommandMessage(_ typed: String) -> String {
        let names = configuration.subcommands.compactMap { $0.configuration.commandName }
        let closest = names.map { ($0, editDistance(typed.lowercased(), $0)) }.min { $0.1 < $1.1 }
        let suggestion =
            closest.flatMap { name, distance in distance <= max(2, name.count / 3) ? "; did you mean \"\(name)\"?" : nil } ?? ""
        return "unknown command \"\(typed)\"\(suggestion) (see 'pinpath --help')"
    }

    /// The Levenshtein distance between two words, on their Unicode scalars.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// `pinpath` and the subcommand named on the command line, if any: what `--help` explains.
    static func invokedCommand() -> String {
        let names = configuration.subcommands.compactMap { $0.configuration.commandName }
        guard let subcommand = CommandLine.arguments.dropFirst().first(where: { names.contains($0) }) else { return "pinpath" }
        return "pinpath \(subcommand)"
    }
}
