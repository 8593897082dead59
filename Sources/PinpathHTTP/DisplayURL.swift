/// URLs as messages, events and the terminal show them: without credentials, query or fragment, where
/// tokens live (`?access_token=…`, `user:password@`, `#access_token=…` of OAuth's implicit flow).
public enum DisplayURL {
    /// `text` (a URL, or what a user typed as one) without its userinfo, query and fragment. Works on the
    /// text itself, so it also redacts what no URL parser accepts: an error message quoting a malformed URL
    /// must not leak the token in it either.
    public static func redacting(_ text: String) -> String {
        var rest = Substring(text)
        var result = ""
        // Only a URL with an authority (`scheme://`) has userinfo; `mailto:a@b` keeps its address.
        if let scheme = rest.firstRange(of: "://") {
            result += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            // Userinfo ends at the last `@` before the path; a `?` or `#` typed in a password does not end it.
            let authority = rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)]
            if let at = authority.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        }
        result += rest[..<(rest.firstIndex { $0 == "?" || $0 == "#" } ?? rest.endIndex)]
        return result
    }
}
