/// Per-host policies: the policy for a host unites the pins of every matching entry, as OkHttp does.
public struct HostPolicySet: Sendable {
    /// The entries, in configuration order.
    public let entries: [HostPolicy]

    /// Creates a set.
    public init(_ entries: [HostPolicy]) {
        self.entries = entries
    }

    /// The policy for `host`, or `nil` when no entry matches (the host is not pinned).
    ///
    /// The first matching entry gives the mode and the flags (allow invalid, validates domain name, enforce,
    /// expires, include subdomains); the pins and pinned certificates of all matching entries are united.
    public func policy(for host: String) -> SecurityPolicy? {
        let matching = entries.compactMap { entry in entry.pattern(matching: host).map { (entry, $0) } }
        guard let (first, pattern) = matching.first else { return nil }
        var policy = first.policy
        policy.notedHostname = pattern.description
        policy.includeSubdomains = first.includeSubdomains || pattern.depth == .anyLabels
        for (entry, _) in matching.dropFirst() {
            policy.unite(with: entry.policy)
        }
        return policy
    }
}

extension SecurityPolicy {
    /// Adds another entry's pins; the entries were validated one by one, so the union needs no new check.
    mutating func unite(with other: SecurityPolicy) {
        self = SecurityPolicy(
            uniting: self, pins: pins.union(other.pins),
            pinnedCertificates: pinnedCertificates + other.pinnedCertificates.filter { !pinnedCertificates.contains($0) })
    }
}
