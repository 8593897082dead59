/// A ``SecurityPolicy`` for the hosts some patterns match (one entry of a TrustKit or OkHttp configuration).
public struct HostPolicy: Sendable {
    /// The hosts this entry is for.
    public let patterns: [HostPattern]
    /// Whether exact patterns also cover their subdomains (TrustKit `includeSubdomains`).
    public let includeSubdomains: Bool
    /// The policy for those hosts.
    public let policy: SecurityPolicy

    /// Creates an entry.
    public init(patterns: [HostPattern], includeSubdomains: Bool = false, policy: SecurityPolicy) {
        self.patterns = patterns
        self.includeSubdomains = includeSubdomains
        self.policy = policy
    }

    /// The first pattern that matches `host`, if any.
    public func pattern(matching host: String) -> HostPattern? {
        patterns.first { $0.matches(host, includeSubdomains: includeSubdomains) }
    }
}
