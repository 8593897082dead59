import FoundationEssentials
import PinpathSupport

/// An HTTP or HTTPS proxy that requests go through: https URLs through a CONNECT tunnel (the origin's TLS is
/// end to end, checked by the origin's policy), http URLs forwarded. With `https://`, the connection to the
/// proxy is TLS too, checked by the policy matching the proxy's host.
///
/// Its ``description`` never shows the credentials; ``username`` and ``password`` go to libcurl as options of
/// their own, never inside a URL that a message could quote.
public struct Proxy: Sendable, Hashable, CustomStringConvertible {
    /// How the client talks to the proxy itself.
    public enum Scheme: String, Sendable {
        case http
        case https
    }

    public let scheme: Scheme
    /// The host name or address, without IPv6 brackets.
    public let host: String
    public let port: Int
    /// Credentials for `Proxy-Authorization: Basic`, percent-decoded.
    public let username: String?
    public let password: String?

    /// Parses a proxy URL as curl and the `*_proxy` variables write it: `http://host:port`,
    /// `https://user:password@host:port`, or `host:port` (http). Without a port, 1080 for http (curl's
    /// default) and 443 for https.
    /// - Throws: ``HTTPError`` `invalidURL` naming what is wrong (without the credentials): a socks or other
    ///   scheme, no host, a bad port, a path, query or fragment.
    public init(parsing text: String) throws(HTTPError) {
        let trimmed = Self.trimmed(text)
        let shown = Self.withoutCredentials(trimmed)
        let withScheme = trimmed.contains("://") ? trimmed : "http://\(trimmed)"
        guard let parts = URLComponents(string: withScheme), let schemeText = parts.scheme?.lowercased() else {
            throw HTTPError(.invalidURL, "\"\(shown)\" is not a proxy URL (use http://host:port or https://host:port)")
        }
        guard let scheme = Scheme(rawValue: schemeText) else {
            let hint = schemeText.hasPrefix("socks") ? "socks proxies are not supported" : "the scheme must be http or https"
            throw HTTPError(.invalidURL, "\"\(shown)\": \(hint) (use http://host:port or https://host:port)")
        }
        guard let host = parts.host.map(URLHost.withoutBrackets), !host.isEmpty else {
            throw HTTPError(.invalidURL, "\"\(shown)\" names no proxy host (use \(scheme.rawValue)://host:port)")
        }
        guard parts.path.isEmpty || parts.path == "/", parts.query == nil, parts.fragment == nil else {
            throw HTTPError(.invalidURL, "\"\(shown)\": a proxy URL has no path, query or fragment (use \(scheme.rawValue)://host:port)")
        }
        let port = parts.port ?? (scheme == .https ? 443 : 1080)
        guard (1...65535).contains(port) else {
            throw HTTPError(.invalidURL, "\"\(shown)\": the proxy port must be 1 to 65535")
        }
        self.scheme = scheme
        self.host = host
        self.port = port
        username = parts.user
        password = parts.password
    }

    /// `value` with every byte but RFC 3986's unreserved characters percent-encoded: the user information's own
    /// delimiters (`:`, `@`) among them, which Foundation's user and password encodings keep. What a user name or
    /// password is put into a URL as, and what libcurl is given (it percent-decodes `CURLOPT_PROXYUSERNAME` and
    /// `CURLOPT_PROXYPASSWORD`, so a password holding `%41` would otherwise reach the proxy as `A`).
    public static func percentEncoded(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            if unreserved.contains(byte) {
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                encoded += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0x0F, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// `http://host:port`, without credentials: what messages, events and the terminal show.
    public var description: String { "\(scheme.rawValue)://\(URLHost.bracketed(host)):\(port)" }

    /// `text` for a message: nothing before its last `@` is shown, since a URL that does not parse (a password
    /// holding `/` or `#`, a missing scheme) would otherwise keep its credentials through ``DisplayURL``.
    static func withoutCredentials(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return DisplayURL.redacting(text) }
        let scheme = text.firstRange(of: "://").map { String(text[..<$0.upperBound]) } ?? ""
        return scheme + text[text.index(after: at)...]
    }

    /// `text` without spaces and tabs around it (an environment variable's value often ends with one).
    static func trimmed(_ text: some StringProtocol) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(text.drop(while: isBlank).reversed().drop(while: isBlank).reversed())
    }

    /// What libcurl's `CURLOPT_PROXY` gets: the ``description`` (credentials are set apart).
    var curlURL: String { description }
}

extension URLHost {
    /// `host`, in brackets when it is an IPv6 address, as a URL's authority writes it.
    static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
