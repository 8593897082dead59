import FoundationEssentials
import PinpathHTTP
import PinpathSupport
import PinpathYAML

extension URL {
    /// `URL(string:)` for an endpoint's `url`, refusing a host RFC 3986 does not allow
    /// (``URLHost/isWellFormed(inURLText:)``), as it was refused while the agent linked all of Foundation.
    /// Characters invalid elsewhere (a space in the path) are still percent-encoded, as before.
    init?(endpointText text: String) {
        guard let url = URL(string: text), URLHost.isWellFormed(inURLText: text) else { return nil }
        self = url
    }
}

extension ConfigurationDecoder {
    /// An absolute URL of a ``ServiceKind`` with a host and no credentials; `tls://` and `tcp://` with a port.
    func url(_ node: Node, _ keyPath: String) -> URL? {
        guard let text = string(node, keyPath, "a URL") else { return nil }
        let problem: String?
        let url = URL(endpointText: text)
        // Problems reach the journal: no query, no credentials, and only the start of a long one.
        let shown = ConfigurationProblem.quoted(DisplayURL.redacting(text))
        if text.contains("${") {
            problem = "\(shown) uses ${…}, which only header values may; put a token in a header instead"
        } else if let url, let kind = ServiceKind(scheme: url.scheme) {
            if let refusal = kind.refusal {
                problem = "\(shown): \(refusal)"
            } else if url.host?.isEmpty ?? true {
                problem = "\(shown) has no host"
            } else if url.user != nil || url.password != nil {
                problem =
                    "the URL holds a user name or password, which would appear in events; use an Authorization header with ${ENV} instead"
            } else if let port = url.port, !(1...65535).contains(port) {
                problem = "\(shown): port \(port) is out of range (1-65535)"
            } else if kind.defaultPort == nil && url.port == nil {
                problem = "\(shown) has no port; a \(kind.rawValue):// URL needs one (\(kind.rawValue)://host:port)"
            } else if !kind.isHTTP && !(url.path.isEmpty || url.path == "/") {
                problem = "\(shown) has a path; a \(kind.rawValue):// probe only connects (write \(kind.rawValue)://host:port)"
            } else {
                problem = nil
            }
        } else {
            problem = """
                \(shown) is not a URL pinpath probes; use one of \(ServiceKind.probed.map { "\($0.rawValue)://" }.joined(separator: ", ")) \
                (such as https://api.example.com/health or tls://db.example.com:5432)
                """
        }
        if let problem {
            report(.invalidValue, at: node, keyPath, problem)
            return nil
        }
        return url
    }
}
