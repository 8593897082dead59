import ArgumentParser
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
        version: PinpathVersion.current,
        subcommands: [
            RunCommand.self, CheckConfigCommand.self, StatusCommand.self, WatchCommand.self, RequestCommand.self,
            AuditCommand.self, VerifyCommand.self, PinsCommand.self,
        ]
    )

    /// ArgumentParser's `main`, except that pinpath's own failures (a refused value or option, a
    /// ``CommandFailure`` from `run()`) are one `pinpath: error: …` line with their exit code.
    static func main() async {
        // Before any OpenSSL use: the process may exit while a task or libcurl's thread is still inside OpenSSL.
        OpenSSLRuntime.initialiseWithoutExitCleanup()
        do {
            var command = try await asyncParseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            exit(withError: failure.report())
        } catch {
            exit(withError: ArgumentRefusal.recorded?.report() ?? error)
        }
    }
}
