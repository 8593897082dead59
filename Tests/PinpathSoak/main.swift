// pinpath-soak: runs `pinpath run` for N minutes against healthy and hostile endpoints on 127.0.0.1 and prints
// its descriptors, resident memory and threads over time, then a summary (see Tests/PinpathTestSupport/Soak.swift).
//
//   swift build --product pinpath-soak && swift build -c release --product pinpath
//   .build/debug/pinpath-soak --soak-minutes 30 --pinpath .build/release/pinpath
//
// It measures and prints; it asserts nothing (SoakTests in PinpathIntegrationTests judges a 2-minute run).
// Exit status: 0 when the agent ran the whole time and exited 0 on SIGTERM, 1 otherwise, 64 bad usage.
import ArgumentParser
import Foundation
import PinpathTestSupport

@main
struct PinpathSoak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinpath-soak",
        abstract: "Run pinpath against healthy and hostile endpoints; print descriptors, RSS and threads over time.")

    @Option(help: "How long the agent runs, in minutes (decimals allowed).")
    var soakMinutes: Double = 2

    @Option(help: "The pinpath binary (default: the one built next to this program).")
    var pinpath: String?

    @Option(help: "Seconds covered by one row of the table (default: about 30 rows, at least 10 s each).")
    var reportSeconds: Int?

    @Option(help: "Send SIGHUP (reload the unchanged configuration) every this many seconds; 0 never.")
    var reloadSeconds = 30

    @Flag(help: "Run the agent as this user even when root (by default root runs it as nobody).")
    var privileged = false

    func validate() throws {
        guard soakMinutes > 0, soakMinutes <= 24 * 60 else {
            throw ValidationError("--soak-minutes \(soakMinutes): use a number of minutes above 0, at most 1440")
        }
        if let reportSeconds, reportSeconds < 1 { throw ValidationError("--report-seconds \(reportSeconds): use 1 or more") }
        if reloadSeconds < 0 { throw ValidationError("--reload-seconds \(reloadSeconds): use 0 (never) or more") }
    }

    func run() async throws {
        var options = Soak.Options(minutes: soakMinutes, pinpath: pinpath ?? Shell.pinpath)
        if let reportSeconds { options.reportEvery = .seconds(reportSeconds) }
        options.unprivileged = !privileged
        options.reloadEvery = reloadSeconds > 0 ? .seconds(reloadSeconds) : nil
        let report = try await Soak.run(options, log: Self.printNow)
        Self.printNow(report.summary)
        guard case .stopped(code: 0, _) = report.exit else { throw ExitCode(1) }
    }

    /// Writes a line at once, unbuffered: a long run redirected to a file shows its table as it goes.
    @Sendable static func printNow(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
