import FoundationEssentials
import PinpathHTTP
import PinpathSupport

/// Turns what a user typed into the absolute http or https URL a request is sent to.
public enum RequestURL {
    /// Resolves `string` against `baseURL` with AFNetworking's rule, and checks the result.
    ///
    /// A base URL with a path gets a trailing slash first (`http://h/api` → `http://h/api/`), so that `get`
    /// resolves to `http://h/api/get` rather than replacing `api`; `/get` still resolves from the root, and
    /// an absolute URL ignores the base (RFC 3986 §5.2).
    /// - Throws: ``HTTPError`` `invalidURL` naming the input when it is malformed (spaces, control characters,
    ///   a bad host) or the result is not absolute http or https with a host.
    public static func resolve(_ string: String, relativeTo baseURL: URL? = nil) throws(HTTPError) -> URL {
        // Quoted without credentials, query or fragment: a mistyped URL may still hold a token.
        let shown = UntrustedText.escaped(DisplayURL.redacting(string))
        let input = baseURL.map { "\"\(shown)\" relative to \(DisplayURL.redacting($0.absoluteString))" } ?? "\"\(shown)\""
        let resolved: URL
        if string.isEmpty, let baseURL {
            resolved = directory(baseURL)
        } else {
            // Parsed alone first and without encoding invalid characters: a URL with a space or a newline in
            // it is a mistake to report, not something to repair silently (`relativeTo:` would encode it).
            guard let url = URL(string: string, encodingInvalidCharacters: false) else {
                throw HTTPError(.invalidURL, "\(input) is not a valid URL (percent-encode spaces, control and non-ASCII characters)")
            }
            resolved = baseURL.flatMap { URL(string: string, relativeTo: directory($0))?.absoluteURL } ?? url
        }
        guard let scheme = resolved.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            // A kind the core refuses says why, so that no one retries it another way.
            let refusal = ServiceKind(scheme: resolved.scheme)?.refusal.map { ": \($0)" } ?? ""
            throw HTTPError(
                .invalidURL, "\(input) is not an absolute http or https URL (use http://host/path or https://host/path)\(refusal)")
        }
        guard resolved.host(percentEncoded: true)?.isEmpty == false else {
            throw HTTPError(.invalidURL, "\(input) has no host")
        }
        if let port = resolved.port, !(1...65535).contains(port) {
            throw HTTPError(.invalidURL, "\(input): port \(port) is out of range (1-65535)")
        }
        return resolved
    }

    /// `baseURL` with a trailing slash on its path (AFHTTPSessionManager's `initWithBaseURL:`).
    static func directory(_ baseURL: URL) -> URL {
        guard !baseURL.path.isEmpty, !baseURL.absoluteString.hasSuffix("/") else { return baseURL }
        return baseURL.appendingPathComponent("")
    }

    /// `url` with `query` (already escaped) added to its query: after `&` when it has one, never a bare `?`.
    static func appendingQuery(_ query: String, to url: URL) -> URL {
        guard !query.isEmpty, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url }
        let existing = components.percentEncodedQuery ?? ""
        components.percentEncodedQuery = existing.isEmpty ? query : "\(existing)&\(query)"
        return components.url ?? url
    }
}
