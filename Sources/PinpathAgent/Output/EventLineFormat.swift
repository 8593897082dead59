import Glibc
import PinpathSupport

/// What a line carries around its event, for where it goes: the syslog priority journald reads, and the
/// machine's name for lines shipped from many machines to one place.
package struct EventLineFormat: Sendable, Equatable {
    /// Each line starts with `<N>`, its level's syslog priority (sd-daemon(3)): journald files the line at
    /// that priority and strips the prefix, so `journalctl -p warning` finds warnings and errors.
    package let syslogPrefix: Bool
    /// `"host":"<name>"` in the envelope, after `seq`.
    package let host: String?
    /// `"host":"<name>",` encoded once, rather than for every line.
    let hostField: [UInt8]

    package init(syslogPrefix: Bool = false, host: String? = nil) {
        self.syslogPrefix = syslogPrefix
        self.host = host
        var field: [UInt8] = []
        if let host {
            field.append(contentsOf: #""host":"#.utf8)
            JSONValue.string(host).encode(into: &field)
            field.append(UInt8(ascii: ","))
        }
        hostField = field
    }

    /// For standard output: the prefix when standard output is the journal, pure JSON lines otherwise (a
    /// terminal, a pipe, a file). systemd names the journal's stream in `JOURNAL_STREAM` as `DEVICE:INODE`
    /// (systemd.exec(5)); standard output is the journal only while it still is that stream, not after a
    /// redirection (`pinpath run > file` under systemd).
    package static func standardOutput(environment: [String: String]) -> EventLineFormat {
        guard let stream = environment["JOURNAL_STREAM"] else { return EventLineFormat() }
        let parts = stream.split(separator: ":")
        var status = stat()
        guard parts.count == 2, let device = UInt(parts[0]), let inode = UInt(parts[1]), fstat(STDOUT_FILENO, &status) == 0
        else { return EventLineFormat() }
        return EventLineFormat(syslogPrefix: UInt(status.st_dev) == device && UInt(status.st_ino) == inode)
    }

    /// For a file: pure JSON lines, with the machine's node name (`uname -n`) in each, for fleet shipping.
    package static func file() -> EventLineFormat {
        var name = utsname()
        guard uname(&name) == 0 else { return EventLineFormat() }
        let host = withUnsafeBytes(of: name.nodename) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return EventLineFormat(host: host.isEmpty ? nil : host)
    }
}
