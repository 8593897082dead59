import ArgumentParser
import PinpathReachability

/// Flags shared by the commands that read the reachability monitor.
struct MonitorOptions: ParsableArguments {
    @Option(name: .customLong("target"), help: "A host name or IP address whose reachability to report (repeatable).")
    var targets: [String] = []

    @Option(help: "Monitor this network namespace (a name under /run/netns, or a path) instead of our own.")
    var netns: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    /// Parses every `--target`; the first bad one ends the command with exit 64.
    func parsedTargets() throws -> [ReachabilityTarget] {
        try targets.map { text in
            do {
                return try ReachabilityTarget(parsing: text)
            } catch let error as ReachabilityError {
                throw CommandFailure.usage("--target \(error.message)")
            }
        }
    }

    /// Starts the monitor, turning "no netlink here" into exit 69 with a clear message.
    func startMonitor() async throws -> ReachabilityMonitor {
        let targets = try parsedTargets()
        do {
            return try await ReachabilityMonitor.start(.init(networkNamespace: netns), targets: targets)
        } catch let error as ReachabilityError {
            throw CommandFailure.unavailable("netlink is unavailable: \(error.message)")
        }
    }
}
