/// A ``SecurityPolicy`` for the hosts some patterns match (one entry of a TrustKit or OkHttp configuration),
/// with the trust store its chains are verified against.
public struct HostPolicy: Sendable {
    /// The hosts this entry is for.
    public let patterns: [HostPattern]
    /// Whether exact patterns also cover their subdomains (TrustKit `includeSubdomains`).
    public let includeSubdomains: Bool
    /// The policy for those hosts.
    public let policy: SecurityPolicy
    /// The anchors for those hosts' chains; `nil` names none (the request's or the session's store applies).
    /// When several entries match a host, ``HostPolicySet/resolution(for:)`` says which store wins.
    public let trustStore: TrustStore?

    /// Creates an entry.
    public init(patterns: [HostPattern], includeSubdomains: Bool = false, policy: SecurityPolicy, trustStore: TrustStore? = nil) {
        self.patterns = patterns
        self.includeSubdomains = includeSubdomains
        self.policy = policy
        self.trustStore = trustStore
    }

    /// The first pattern that matches `host`, if any.
    public func pattern(matching host: String) -> HostPattern? {
        patterns.first { $0.matches(host, includeSubdomains: includeSubdomains) }
    }

    /// A pattern of this entry and one of `other` that some host matches both of, if there are such.
    public func overlap(with other: HostPolicy) -> (HostPattern, HostPattern)? {
        for mine in patterns {
            for theirs in other.patterns
            where mine.overlaps(theirs, includingSubdomains: includeSubdomains, other.includeSubdomains) {
                return (mine, theirs)
            }
        }
        return nil
    }
}
