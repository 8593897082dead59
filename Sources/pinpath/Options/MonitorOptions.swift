import ArgumentParser
import PinpathReachability

/// Flags shared by the commands that read the reachability monitor.
struct MonitorOptions: ParsableArguments {
    @Option(name: .customLong("target"), help: "A host name or IP address whose reachability to report (repeatable).")
    var targets: [ReachabilityTarget] = []

    @Option(help: "Monitor this network namespace (a name under /run/netns, or a path) instead of our own.")
    var netns: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    /// Starts the monitor, turning "no netlink here" (or no such namespace) into exit 69 with a clear message.
    func startMonitor() async throws -> ReachabilityMonitor {
        do {
            return try await ReachabilityMonitor.start(.init(networkNamespace: netns), targets: targets)
        } catch let error as ReachabilityError {
            if error.code == .namespaceUnavailable { throw CommandFailure.unavailable("--netns: \(error.message)") }
            throw CommandFailure.unavailable("netlink is unavailable: \(error.message)")
        }
    }
}
