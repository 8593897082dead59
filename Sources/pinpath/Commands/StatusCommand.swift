import ArgumentParser
import PinpathAgent
import PinpathReachability
import PinpathSupport

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print whether this machine and each --target can be reached, and through which interface.",
        discussion: """
            With --check, the exit code says it too, for health checks and scripts.
            Exit codes: 0 printed (with --check: the path and every --target reachable), 1 with --check: the path \
            or a --target is not reachable, 64 usage error, 69 netlink unavailable or the --netns namespace cannot \
            be entered, 74 output error.
            """)

    @OptionGroup var options: MonitorOptions

    @Flag(help: "Exit 1 when the path or any --target is not reachable (after printing, as always).")
    var check = false

    func run() async throws {
        let monitor = try await options.startMonitor()
        let path = monitor.currentPath
        monitor.stop()
        try writeOutput(options.json ? ReachabilityJSON.snapshot(path).encoded() + "\n" : PathText.snapshot(path))
        if check && (path.status != .reachable || path.targets.contains { $0.status != .reachable }) {
            throw ExitCode(1)
        }
    }
}
