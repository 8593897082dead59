import ArgumentParser
import PinpathAgent
import PinpathReachability
import PinpathSupport

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print whether this machine and each --target can be reached, and through which interface.")

    @OptionGroup var options: MonitorOptions

    func run() async throws {
        let monitor = try await options.startMonitor()
        let path = monitor.currentPath
        monitor.stop()
        try writeOutput(options.json ? ReachabilityJSON.snapshot(path).encoded() + "\n" : PathText.snapshot(path))
    }
}
