/// How much an event matters, in syslog's severities (RFC 5424), so that `journalctl -p`, Loki's level
/// detection and alert routers can tell a pin failure from a probe that went well.
public struct EventLevel: Hashable, Sendable, CustomStringConvertible {
    /// The `level` value: `info`, `warning` or `error`.
    public let name: String
    /// The syslog priority: 6 info, 4 warning, 3 error (the `<N>` prefix journald reads, sd-daemon(3)).
    public let syslogPriority: Int

    public var description: String { name }

    /// Nothing to act on: a probe succeeded, the agent started.
    public static let info = EventLevel(name: "info", syslogPriority: 6)
    /// Worth a look: a probe failed, the path went away, lines were dropped, a report-only pin failed.
    public static let warning = EventLevel(name: "warning", syslogPriority: 4)
    /// Something is wrong: an endpoint is down, an enforced pin failed, a reload was refused.
    public static let error = EventLevel(name: "error", syslogPriority: 3)
}
