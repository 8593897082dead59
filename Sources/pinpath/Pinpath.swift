import ArgumentParser
import PinpathHTTP

@main
struct Pinpath: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinpath",
        abstract: "Network reachability and TLS security-policy monitoring for Linux.",
        discussion: """
            Exit codes: 0 success, 64 usage error, 65 unreadable input (pins), 69 netlink (or another \
            needed service) unavailable, 74 output error, 78 invalid configuration (check-config). `request` \
            has its own codes 1-5, listed in its help.
            """,
        version: PinpathVersion.current,
        subcommands: [
            StatusCommand.self, WatchCommand.self, PinsCommand.self, RequestCommand.self, CheckConfigCommand.self,
        ]
    )
}
