extension HeaderFields {
    /// Lowercased parts of a field name that mark its value as a credential, whatever the value holds:
    /// `Authorization`, `Proxy-Authorization`, `Cookie` and `Set-Cookie` by their parts, and the names services
    /// invent for the same thing (`X-API-Key`, `X-Auth-Token`, `X-Session-Id`, `X-Upstream-Token`,
    /// `Private-Key`, `X-Client-Secret`, `X-Password`). A name matches when it contains any of them.
    ///
    /// A pattern errs towards hiding: a harmless field that matches (`Sec-WebSocket-Key`) is only redacted, or
    /// not carried across an https → http redirect, while a missed one leaks a secret.
    public static let credentialNameParts = [
        "auth", "cookie", "token", "secret", "session", "key", "password", "passwd", "credential",
    ]

    /// Whether the field `name` (in any case) carries a credential: the one rule for what is never sent in
    /// clear text after an https → http redirect (``RequestOptions/keepsHeadersAcrossOrigins`` notwithstanding),
    /// and never shown by the agent (a configured value reads `[redacted]` in `check-config --effective`, events
    /// and dumps).
    public static func isCredential(_ name: String) -> Bool {
        let lowercased = name.lowercased()
        return credentialNameParts.contains { lowercased.contains($0) }
    }
}
