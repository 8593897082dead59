import Glibc

/// Where `/metrics` listens (`metrics.listen`): an IP address and port, or a Unix socket path.
public enum MetricsListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// An IPv4 or IPv6 literal (brackets removed) and a port.
    case tcp(host: String, port: Int)
    /// An absolute path for a Unix stream socket.
    case unix(path: String)

    /// Why a listen address was refused: one sentence naming the text and what is expected.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The sentence.
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The longest Unix socket path: `sun_path` holds 108 bytes, the last a NUL.
    static let maximumPathBytes = 107

    /// Reads `127.0.0.1:9818`, `[::1]:9818` or `/run/pinpath/metrics.sock`.
    /// - Throws: a sentence saying what is wrong and what is expected, for a configuration problem.
    public init(parsing text: String) throws(ParseError) {
        let expected = "use an address and port (127.0.0.1:9818, [::1]:9818) or an absolute Unix socket path (/run/pinpath/metrics.sock)"
        if text.hasPrefix("/") {
            guard text.utf8.count <= Self.maximumPathBytes else {
                throw ParseError(
                    "the socket path is \(text.utf8.count) bytes long; a Unix socket path has at most \(Self.maximumPathBytes)")
            }
            guard !text.hasSuffix("/") else {
                throw ParseError("\(ConfigurationProblem.quoted(text)) names a directory, not a socket file; \(expected)")
            }
            self = .unix(path: text)
            return
        }
        guard let colon = text.lastIndex(of: ":") else {
            throw ParseError("\(ConfigurationProblem.quoted(text)) has no port and is not an absolute path; \(expected)")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText), (1...65535).contains(port), portText.allSatisfy(\.isASCII) else {
            throw ParseError(
                "\(ConfigurationProblem.quoted(String(portText))) in \(ConfigurationProblem.quoted(text)) is not a port (1 to 65535); \(expected)"
            )
        }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard Self.isAddress(host, family: AF_INET6) else {
                throw ParseError(
                    "\(ConfigurationProblem.quoted(host)) in \(ConfigurationProblem.quoted(text)) is not an IPv6 address; \(expected)")
            }
        } else if host.contains(":") {
            throw ParseError("\(ConfigurationProblem.quoted(text)): an IPv6 address needs brackets, as in [::1]:9818")
        } else if !Self.isAddress(host, family: AF_INET) {
            // Names are refused: which address a name gives can change, and a resolver must not be needed to listen.
            throw ParseError(
                "\(ConfigurationProblem.quoted(host)) in \(ConfigurationProblem.quoted(text)) is not an IP address (names are not resolved here); \(expected)"
            )
        }
        self = .tcp(host: host, port: port)
    }

    /// As written in the configuration: `127.0.0.1:9818`, `[::1]:9818`, `/run/pinpath/metrics.sock`.
    public var description: String {
        switch self {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): path
        }
    }

    private static func isAddress(_ text: String, family: Int32) -> Bool {
        var buffer = (UInt64(0), UInt64(0))
        return withUnsafeMutableBytes(of: &buffer) { inet_pton(family, text, $0.baseAddress) == 1 }
    }
}
