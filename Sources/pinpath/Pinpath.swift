import ArgumentParser

@main
struct Pinpath: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pinpath",
        abstract: "Network reachability and TLS security-policy monitoring for Linux.",
        discussion: """
            Exit codes: 0 success, 64 usage error, 65 unreadable input (pins), 69 netlink (or another \
            needed service) unavailable, 74 output error. audit has its own: 1 pin mismatch, 2 chain or \
            host invalid, 3 no TLS handshake (see pinpath audit --help).
            """,
        version: "0.1.0",
        subcommands: [StatusCommand.self, WatchCommand.self, PinsCommand.self, AuditCommand.self]
    )
}
