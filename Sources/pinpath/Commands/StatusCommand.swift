import ArgumentParser
import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSupport

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print whether this machine and each --target can be reached, and through which interface.",
        discussion: """
            With --connectivity URL, also the connectivity verdict (none, limited, portal, intercepted, full) from one request \
            to URL (expected answer: 204 with an empty body; redirects are not followed). With --check, the exit \
            code says it too, for health checks and scripts.
            Exit codes: 0 printed (with --check: the path and every --target reachable, and connectivity full), \
            1 with --check: the path or a --target is not reachable, or connectivity is not full, 64 usage error, \
            69 netlink unavailable or the --netns namespace cannot be entered, 74 output error.
            """)

    @OptionGroup var options: MonitorOptions

    @Flag(help: "Exit 1 when the path or any --target is not reachable, or --connectivity is not full (after printing).")
    var check = false

    @Option(help: "An http:// or https:// URL that answers 204: check connectivity through it (portal, dead upstream).")
    var connectivity: String?

    func validate() throws {
        try ArgumentRefusal.checking { () throws(CommandFailure) in
            if let connectivity { _ = try Self.connectivityURL(connectivity) }
        }
    }

    func run() async throws {
        let monitor = try await options.startMonitor()
        defer { monitor.stop() }
        let path = monitor.currentPath
        var verdict: (ConnectivityVerdict, URL)?
        if let connectivity {
            let url = try Self.connectivityURL(connectivity)
            let session: Session
            do {
                session = try Session(monitor: monitor)
            } catch {
                throw CommandFailure.unavailable(error.message)
            }
            verdict = (await session.checkConnectivity(ConnectivityCheck(url: url)), url)
            session.shutdown()
        }
        if options.json {
            var object = path.snapshotJSON
            if let (result, url) = verdict, case .object(let fields) = object {
                object = .object(fields + [("connectivity", .object(result.jsonFields(url: url)))])
            }
            try writeOutput(object.encoded() + "\n")
        } else {
            // The reason quotes whoever answered the check (a portal's Location host): escaped, never acted on.
            let line = verdict.map { result, url in
                UntrustedText.escapedLines([
                    "connectivity: \(result.state.rawValue) (\(result.reason)) via \(DisplayURL.redacting(url.absoluteString))"
                ])
            }
            try writeOutput(PathText.snapshot(path) + (line ?? ""))
        }
        let unreachable = path.status != .reachable || path.targets.contains { $0.status != .reachable }
        if check && (unreachable || (verdict.map { $0.0.state != .full } ?? false)) {
            throw ExitCode(1)
        }
    }

    private static func connectivityURL(_ text: String) throws(CommandFailure) -> URL {
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased()), url.host?.isEmpty == false else {
            throw CommandFailure.usage("--connectivity: \"\(DisplayURL.redacting(text))\" is not an http:// or https:// URL")
        }
        return url
    }
}
