import FoundationEssentials
import PinpathHTTP
import PinpathYAML

/// The proxies an endpoint's probes go through, and where that choice was made: the endpoint's `proxy:`,
/// the file's top-level `proxy:`, or the environment (`https_proxy`, `HTTPS_PROXY`, `http_proxy`,
/// `no_proxy`, `NO_PROXY`, read by curl's rules). `none` in either key connects directly and ignores the
/// environment.
package struct ProxyConfiguration: Sendable, Equatable {
    /// Where the choice was made.
    package enum Source: String, Sendable {
        case endpoint
        case configuration
        case environment
    }

    /// Which proxy each URL goes through (``ProxySettings/proxy(for:)``).
    package let settings: ProxySettings
    package let source: Source

    /// What `check-config` prints for a probe of `url`: `http://proxy:3128 (endpoint)`, `none (environment)`,
    /// never the credentials.
    package func summary(for url: URL) -> String {
        "\(settings.proxy(for: url)?.description ?? "none") (\(source.rawValue))"
    }

}

extension ProxyConfiguration: ConfigurationReadable {
    /// A `proxy:` (the file's or an endpoint's, as `source` says); `nil` after reporting why it cannot be used.
    init?(reading node: Node, at keyPath: String, in source: Source, _ decoder: ConfigurationDecoder) {
        guard let settings = decoder.proxy(node, keyPath) else { return nil }
        self.init(settings: settings, source: source)
    }

    /// The file's default when it has no `proxy:` key: the environment's proxies.
    static func environment(_ decoder: ConfigurationDecoder) -> ProxyConfiguration {
        do throws(HTTPError) {
            let settings = try ProxySettings.environment { decoder.environment[$0] }
            return ProxyConfiguration(settings: settings, source: .environment)
        } catch {
            decoder.report(
                .invalidValue, at: nil, "proxy", "\(error.message); fix it, or set proxy: to a URL or none to ignore the environment")
            return ProxyConfiguration(settings: .direct, source: .environment)
        }
    }
}

extension ConfigurationDecoder {
    /// `none`, or an http or https proxy URL; `${NAME}` only in its user name and password.
    ///
    /// The host and port are shown (`check-config`, events) and looked up in DNS: a variable there would put its
    /// value on the terminal and the network, so it is refused before anything is read. A variable's value is
    /// the name or password as it is: it is percent-encoded into the URL, so no `@`, `/` or `:` in it can move
    /// the host.
    func proxy(_ node: Node, _ keyPath: String) -> ProxySettings? {
        let what = "a proxy URL (http://host:port or https://host:port) or none"
        guard let template = string(node, keyPath, what) else { return nil }
        if template == "none" { return .direct }
        guard refuseEnvironmentInIncludedFile(template, node, keyPath) else { return nil }
        let parts = ProxyURLTemplate(template)
        guard !parts.shown.contains("${") else {
            report(
                .invalidValue, at: node, keyPath,
                """
                ${…} may only give a proxy URL's user name or password (http://user:${PASSWORD}@host:port): its host and \
                port are shown in check-config and events, and looked up in DNS
                """)
            return nil
        }
        guard let (userInformation, _) = expand(parts.userInformation, node, keyPath, encodingValue: Proxy.percentEncoded)
        else { return nil }
        do throws(HTTPError) {
            return .through(try Proxy(parsing: parts.scheme + userInformation + parts.atSign + parts.hostAndRest))
        } catch {
            report(.invalidValue, at: node, keyPath, error.message)
            return nil
        }
    }
}

/// A proxy URL as written, split around its user information (`user:password`, before the authority's last `@`).
struct ProxyURLTemplate {
    /// `http://`, or nothing when the URL has no scheme (`host:port`).
    let scheme: String
    /// `user:password`, or nothing.
    let userInformation: String
    /// `@` when there is user information.
    let atSign: String
    /// The host, the port and anything after them.
    let hostAndRest: String

    /// The parts a message or an event shows: all but the user information.
    var shown: String { scheme + hostAndRest }

    init(_ text: String) {
        let afterScheme = text.firstRange(of: "://")?.upperBound ?? text.startIndex
        // The authority ends at the first `/`, `?` or `#`; `${NAME}` holds none of them.
        let authorityEnd = text[afterScheme...].firstIndex { "/?#".contains($0) } ?? text.endIndex
        scheme = String(text[..<afterScheme])
        if let at = text[afterScheme..<authorityEnd].lastIndex(of: "@") {
            userInformation = String(text[afterScheme..<at])
            atSign = "@"
            hostAndRest = String(text[text.index(after: at)...])
        } else {
            userInformation = ""
            atSign = ""
            hostAndRest = String(text[afterScheme...])
        }
    }
}
