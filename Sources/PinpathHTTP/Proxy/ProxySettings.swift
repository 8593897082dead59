import FoundationEssentials

/// Which proxy, if any, each request goes through: one for https URLs, one for http URLs, and the hosts
/// reached directly. Every transfer states the choice to libcurl (`CURLOPT_PROXY`, empty for none, and an
/// empty `CURLOPT_NOPROXY`), so libcurl never reads the environment on its own.
public struct ProxySettings: Sendable, Hashable {
    /// The proxy for https URLs.
    public var httpsProxy: Proxy?
    /// The proxy for http URLs.
    public var httpProxy: Proxy?
    /// Hosts reached without a proxy, as `no_proxy` writes them, matched by curl's rules.
    public var noProxy: NoProxyList

    public init(httpsProxy: Proxy? = nil, httpProxy: Proxy? = nil, noProxy: NoProxyList = .none) {
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
    /// URLs; `no_proxy`, else `NO_PROXY`, for the hosts reached directly (``NoProxyList``). An empty variable is
    /// unset, and so is a proxy variable of blanks only (a `no_proxy` of blanks is a list of no host, as for
    /// curl). `all_proxy` is not read.
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
        let noProxy = [lookup("no_proxy"), lookup("NO_PROXY")].lazy.compactMap { $0 }.first { !$0.isEmpty }
        return ProxySettings(
            httpsProxy: try proxy("https_proxy", "HTTPS_PROXY"), httpProxy: try proxy("http_proxy"),
            noProxy: noProxy.map(NoProxyList.init) ?? .none)
    }

    /// The proxy a request to `url` goes through, or `nil` to connect directly.
    public func proxy(for url: URL) -> Proxy? {
        // Reading the URL's scheme and host costs more than the rest of a direct request's setup.
        // Matched, not compared with nil: a comparison copies each optional proxy (its strings) first.
        if case .none = httpProxy, case .none = httpsProxy { return nil }
        let chosen: Proxy?
        switch url.scheme?.lowercased() {
        case "https": chosen = httpsProxy
        case "http": chosen = httpProxy
        default: chosen = nil
        }
        guard let chosen, let host = url.host(percentEncoded: false) else { return nil }
        return noProxy.matches(host: host) ? nil : chosen
    }
}
