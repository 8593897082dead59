import FoundationEssentials

/// URLs as messages, events and the terminal show them: without credentials, query, fragment or path
/// parameters, where tokens live (`?access_token=…`, `user:password@`, `#access_token=…` of OAuth's implicit
/// flow, `;jsessionid=…` of servlet containers).
package enum DisplayURL {
    /// `text` (a URL, or what a user typed as one) without its userinfo, query, fragment and the parameters of
    /// its path segments (`/app;jsessionid=…/x` shows as `/app/x`).
    ///
    /// A URL that parses is rebuilt from its parts. Text that does not (an error message quoting a malformed
    /// URL) is cut as text, erring towards showing less: a password with an unencoded `/`, `?`, `#` or `@` is
    /// what makes such text malformed, so everything up to the last `@` counts as userinfo.
    package static func redacting(_ text: String) -> String {
        if let url = URL(string: text, encodingInvalidCharacters: false),
            var parts = URLComponents(url: url, resolvingAgainstBaseURL: false),
            parts.host?.isEmpty == false
        {
            parts.user = nil
            parts.password = nil
            parts.query = nil
            parts.fragment = nil
            parts.percentEncodedPath = withoutPathParameters(parts.percentEncodedPath)
            if let shown = parts.string { return shown }
        }
        var rest = Substring(text)
        var result = ""
        // Only a URL with an authority (`scheme://`) has userinfo; `mailto:a@b` keeps its address.
        if let scheme = rest.firstRange(of: "://") {
            result += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        }
        result += withoutPathParameters(rest[..<(rest.firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex)])
        return result
    }

    /// `path` with each segment cut at its first `;` (RFC 3986 §3.3's parameters, where a session id may be).
    private static func withoutPathParameters(_ path: Substring) -> String {
        guard path.contains(";") else { return String(path) }
        return path.split(separator: "/", omittingEmptySubsequences: false).map { $0.prefix { $0 != ";" } }.joined(separator: "/")
    }

    private static func withoutPathParameters(_ path: String) -> String { withoutPathParameters(Substring(path)) }
}
