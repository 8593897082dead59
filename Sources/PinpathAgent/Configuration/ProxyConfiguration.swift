import FoundationEssentials
import PinpathHTTP
import PinpathYAML

/// The proxies an endpoint's probes go through, and where that choice was made: the endpoint's `proxy:`,
/// the file's top-level `proxy:`, or the environment (`https_proxy`, `HTTPS_PROXY`, `http_proxy`,
/// `no_proxy`, `NO_PROXY`, read by curl's rules). `none` in either key connects directly and ignores the
/// environment.
public struct ProxyConfiguration: Sendable, Equatable {
    /// Where the choice was made.
    public enum Source: String, Sendable {
        case endpoint
        case configuration
        case environment
    }

    /// Which proxy each URL goes through (``ProxySettings/proxy(for:)``).
    public let settings: ProxySettings
    public let source: Source

    /// What `check-config` prints for a probe of `url`: `http://proxy:3128 (endpoint)`, `none (environment)`,
    /// never the credentials.
    public func summary(for url: URL) -> String {
        "\(settings.proxy(for: url)?.description ?? "none") (\(source.rawValue))"
    }

    /// The file's default: its `proxy:` key when given, else the environment's proxies.
    static func decodeDefault(_ node: Node?, _ decoder: ConfigurationDecoder) -> ProxyConfiguration {
        if let node {
            return ProxyConfiguration(settings: decoder.proxy(node, "proxy") ?? .direct, source: .configuration)
        }
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
    /// `none`, or an http or https proxy URL (`${NAME}` allowed, for a password).
    func proxy(_ node: Node, _ keyPath: String) -> ProxySettings? {
        let what = "a proxy URL (http://host:port or https://host:port) or none"
        guard let template = string(node, keyPath, what) else { return nil }
        if template == "none" { return .direct }
        guard let (text, _) = expand(template, node, keyPath) else { return nil }
        do throws(HTTPError) {
            return .through(try Proxy(parsing: text))
        } catch {
            report(.invalidValue, at: node, keyPath, error.message)
            return nil
        }
    }
}
