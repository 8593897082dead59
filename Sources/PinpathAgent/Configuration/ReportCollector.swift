import FoundationEssentials
import PinpathHTTP
import PinpathYAML

/// A collector that pin failure reports are POSTed to: one `report_uri` of a policy an endpoint is held to,
/// with what its own host is held to. The report goes through the same gated request core as a probe, so the
/// collector's host gets the policies whose `hosts` match it, exactly as a request there would.
package struct ReportCollector: Sendable, Equatable {
    /// The collector's URL as configured. It may hold credentials (user info, a query token): show
    /// ``displayURL``, never this.
    package let url: URL
    /// The policies that apply to the collector's host, combined; `nil` for plain http and for a host no policy
    /// matches (its chain and host name are still verified against the system store).
    package let security: AppliedPolicy?
    /// The proxies the POST goes through: the file's default (its top-level `proxy:`, else the environment's),
    /// never an endpoint's, since one collector serves every endpoint of its policies.
    package let proxies: ProxySettings

    /// The URL as events and messages show it: without user info, query or fragment.
    package var displayURL: String { DisplayURL.redacting(url.absoluteString) }
}

extension ConfigurationDecoder {
    /// `report_uri`: one http(s) URL or a list of them, each once. Plain http loads with a warning: the report
    /// (and any credentials in the URL) would cross the network in the clear.
    func reportURIs(_ node: Node, _ keyPath: String) -> [URL] {
        guard let items = list(node, keyPath, of: "collector URLs (https://…)", allowingSingle: true) else { return [] }
        let isList = if case .sequence = node { true } else { false }
        var seen: Set<String> = []
        var urls: [URL] = []
        for (index, item) in items.enumerated() {
            let path = isList ? "\(keyPath)[\(index)]" : keyPath
            guard let url = reportURI(item, path) else { continue }
            guard seen.insert(url.absoluteString).inserted else {
                report(.duplicate, at: item, path, "\(DisplayURL.redacting(url.absoluteString)) is already a report_uri of this policy")
                continue
            }
            urls.append(url)
        }
        return urls
    }

    /// One collector URL: absolute http or https with a host. Messages show it redacted: a token in its query or
    /// user info must not reach the terminal or the journal.
    private func reportURI(_ node: Node, _ keyPath: String) -> URL? {
        guard let text = string(node, keyPath, "an https URL") else { return nil }
        let shown = DisplayURL.redacting(text)
        let url = URL(string: text)
        let scheme = url?.scheme?.lowercased()
        let problem: String? =
            if text.isEmpty {
                "the URL is empty; give the collector's https URL (such as https://reports.example.com/pin-failure)"
            } else if text.contains("${") {
                "\(ConfigurationProblem.quoted(shown)) uses ${…}, which only header values may"
            } else if scheme != "http" && scheme != "https" {
                "\(ConfigurationProblem.quoted(shown)) is not an http or https URL (such as https://reports.example.com/pin-failure)"
            } else if url?.host?.isEmpty ?? true {
                "\(ConfigurationProblem.quoted(shown)) has no host"
            } else {
                nil
            }
        if let problem {
            report(.invalidValue, at: node, keyPath, problem)
            return nil
        }
        if scheme == "http" {
            warn(
                .plainHTTPReportURI, at: node, keyPath,
                """
                reports to \(shown) cross the network unencrypted and unauthenticated (the chains, the host names and any \
                credentials in the URL); use https
                """
            )
        }
        return url
    }

    /// The collectors of every policy's `report_uri`, by policy name, each with the policies its own host is held
    /// to (``AppliedPolicy``, as for an endpoint on that host that names no policy). A conflict is reported at the
    /// `report_uri`; one between two host-matched policies is already reported at the policies themselves.
    func reportCollectors(
        _ policies: [PolicyConfiguration], declared: [(name: String, key: Node, value: Node)], proxy: ProxyConfiguration
    ) -> [String: [ReportCollector]] {
        var collectors: [String: [ReportCollector]] = [:]
        for policy in policies where !policy.reportURIs.isEmpty {
            let node = declared.first { $0.name == policy.name }?.value.mapping?["report_uri"]
            collectors[policy.name] = policy.reportURIs.map { url in
                guard url.scheme?.lowercased() == "https", let host = url.host else {
                    return ReportCollector(url: url, security: nil, proxies: proxy.settings)
                }
                do throws(AppliedPolicy.Conflict) {
                    return ReportCollector(
                        url: url, security: try AppliedPolicy(host: host, named: nil, among: policies), proxies: proxy.settings)
                } catch {
                    if error.involvesNamedPolicy {
                        report(
                            .refusedPolicy, at: node, Self.keyPath(Self.keyPath("policies", policy.name), "report_uri"),
                            "\(DisplayURL.redacting(url.absoluteString)): \(error.description)")
                    }
                    return ReportCollector(url: url, security: nil, proxies: proxy.settings)
                }
            }
        }
        return collectors
    }
}
