import FoundationEssentials
import PinpathReachability
import PinpathSupport

/// Which proxy, if any, each request goes through: one for https URLs, one for http URLs, and the hosts
/// reached directly. Every transfer states the choice to libcurl (`CURLOPT_PROXY`, empty for none, and an
/// empty `CURLOPT_NOPROXY`), so libcurl never reads the environment on its own.
public struct ProxySettings: Sendable, Hashable {
    /// The proxy for https URLs.
    public var httpsProxy: Proxy?
    /// The proxy for http URLs.
    public var httpProxy: Proxy?
    /// Hosts reached without a proxy, as `no_proxy` writes them (``bypasses(host:)``).
    public var noProxy: [String]

    public init(httpsProxy: Proxy? = nil, httpProxy: Proxy? = nil, noProxy: [String] = []) {
        self.httpsProxy = httpsProxy
        self.httpProxy = httpProxy
        self.noProxy = noProxy
    }

    /// No proxy: every request connects to its origin. The default of ``RequestOptions``.
    public static let direct = ProxySettings()

    /// Every request through `proxy`, whatever its host (an explicit `proxy:` or `--proxy`).
    public static func through(_ proxy: Proxy) -> ProxySettings {
        ProxySettings(httpsProxy: proxy, httpProxy: proxy)
    }

    /// The environment's proxies, read by curl's rules: `https_proxy`, else `HTTPS_PROXY`, for https URLs;
    /// `http_proxy` only (lower case: CGI programs get a request's `Proxy:` header as `HTTP_PROXY`) for http
    /// URLs; `no_proxy`, else `NO_PROXY`, for the hosts reached directly. An empty variable is unset.
    /// `all_proxy` is not read.
    /// - Throws: ``HTTPError`` `invalidURL` naming the variable whose value is not a usable proxy URL.
    public static func environment(_ lookup: (String) -> String?) throws(HTTPError) -> ProxySettings {
        func value(_ names: String...) -> (name: String, value: String)? {
            for name in names {
                if let value = lookup(name), !Proxy.trimmed(value).isEmpty { return (name, value) }
            }
            return nil
        }
        func proxy(_ names: String...) throws(HTTPError) -> Proxy? {
            var found: (name: String, value: String)?
            for name in names where found == nil { found = value(name) }
            guard let found else { return nil }
            do {
                return try Proxy(parsing: found.value)
            } catch {
                throw HTTPError(.invalidURL, "environment variable \(found.name): \(error.message)")
            }
        }
        let noProxy = value("no_proxy", "NO_PROXY")?.value.split(separator: ",").map(Proxy.trimmed).filter { !$0.isEmpty }
        return ProxySettings(
            httpsProxy: try proxy("https_proxy", "HTTPS_PROXY"), httpProxy: try proxy("http_proxy"), noProxy: noProxy ?? [])
    }

    /// The proxy a request to `url` goes through, or `nil` to connect directly.
    public func proxy(for url: URL) -> Proxy? {
        // Reading the URL's scheme and host costs more than the rest of a direct request's setup.
        guard httpProxy != nil || httpsProxy != nil else { return nil }
        let chosen: Proxy?
        switch url.scheme?.lowercased() {
        case "https": chosen = httpsProxy
        case "http": chosen = httpProxy
        default: chosen = nil
        }
        guard let chosen, let host = url.host(percentEncoded: false) else { return nil }
        return bypasses(host: URLHost.withoutBrackets(host)) ? nil : chosen
    }

    /// Whether `host` is reached directly, by curl's `no_proxy` rules: `*` alone matches every host; a name
    /// matches itself and its subdomains (a leading dot is ignored), without case; an address matches
    /// itself, and a `network/bits` entry the addresses in it. Ports are not part of the match.
    public func bypasses(host: String) -> Bool {
        let host = Self.withoutDots(host)
        let address = IPAddress(host)
        for entry in noProxy {
            if entry == "*" { return true }
            if let address {
                if Self.address(address, matches: entry) { return true }
                continue
            }
            let name = Self.withoutDots(entry)
            if !name.isEmpty, host == name || host.hasSuffix("." + name) { return true }
        }
        return false
    }

    /// Lower case, without a leading or trailing dot (`.example.com.` → `example.com`).
    private static func withoutDots(_ name: String) -> String {
        String(name.lowercased().drop { $0 == "." }.reversed().drop { $0 == "." }.reversed())
    }

    private static func address(_ address: IPAddress, matches entry: String) -> Bool {
        let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
        guard let network = IPAddress(URLHost.withoutBrackets(parts[0])) else { return false }
        let width = network.family == .ipv4 ? 32 : 128
        guard let bits = parts.count == 2 ? Int(parts[1]) : width, (0...width).contains(bits) else { return false }
        return address.isWithin(network, prefixLength: bits)
    }
}
