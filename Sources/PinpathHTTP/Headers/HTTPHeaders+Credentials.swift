extension HTTPHeaders {
    /// Lowercased names of the fields whose values are credentials whatever they hold: never sent in clear
    /// text after an https → http redirect (``RequestOptions/keepsHeadersAcrossOrigins`` notwithstanding),
    /// and never printed by the agent.
    public static let credentialFieldNames: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "x-api-key", "api-key", "x-auth-token", "x-access-token",
    ]

    /// Whether `name` is one of ``credentialFieldNames`` (in any case).
    public static func isCredential(_ name: String) -> Bool { credentialFieldNames.contains(name.lowercased()) }
}
