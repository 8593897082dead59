/// A host and a TCP port to connect to: `HOST[:PORT]`, where HOST is a name, an IPv4 address, or an IPv6
/// address (in brackets when a port follows: `[::1]:443`).
public struct TLSEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// The host name or IP address, without brackets.
    public let host: String
    /// The TCP port.
    public let port: Int

    /// Creates an endpoint from parts already checked by the caller.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST`, `HOST:PORT`, `[IPV6]`, `[IPV6]:PORT` or a bare IPv6 address (which takes `defaultPort`).
    /// - Throws: ``SecurityError`` with code `invalidInput`, naming the text, for an empty host, a host with
    ///   spaces or slashes (a URL), or a port that is not 1–65535.
    public init(parsing text: String, defaultPort: Int = 443) throws {
        guard !text.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "@" }) else {
            throw SecurityError(.invalidInput, "\"\(text)\" is not HOST[:PORT] (give a host name or address, not a URL)")
        }
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else {
                throw SecurityError(.invalidInput, "\"\(text)\" has no closing \"]\" (use [IPV6]:PORT)")
            }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else {
                    throw SecurityError(.invalidInput, "\"\(text)\" has text after \"]\" that is not :PORT")
                }
                portText = rest.dropFirst()
            }
        } else if let colon = host.firstIndex(of: ":"), host[host.index(after: colon)...].firstIndex(of: ":") == nil {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }  // two or more colons without brackets: an IPv6 address with no port
        guard !host.isEmpty else {
            throw SecurityError(.invalidInput, "\"\(text)\" has no host (use HOST[:PORT])")
        }
        var port = defaultPort
        if let portText {
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw SecurityError(.invalidInput, "\"\(text)\": the port \"\(portText)\" is not a number from 1 to 65535")
            }
            port = number
        }
        self.init(host: String(host), port: port)
    }

    /// `host:port`, with an IPv6 address in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
