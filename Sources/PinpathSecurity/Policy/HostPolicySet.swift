/// Per-host policies. When several entries match a host they combine into the strictest policy
/// (``SecurityPolicy/init(combining:)``): no entry, `mode: none` included, can cancel another's pins.
public struct HostPolicySet: Sendable {
    /// The entries, in configuration order.
    public let entries: [HostPolicy]

    /// Creates a set.
    public init(_ entries: [HostPolicy]) {
        self.entries = entries
    }

    /// An entry that matches a host, and the pattern by which it matches.
    public struct Match: Sendable {
        /// The entry's position in ``HostPolicySet/entries``.
        public let index: Int
        /// The entry.
        public let entry: HostPolicy
        /// Its first pattern that matches the host.
        public let pattern: HostPattern
    }

    /// What applies to one host: the matching entries, their combined policy and the one trust store.
    public struct Resolution: Sendable {
        /// The entries that match, in configuration order (never empty).
        public let matches: [Match]
        /// The strictest combination of their policies.
        public let policy: SecurityPolicy
        /// The store the entries name: `nil` when none names one (the caller's default applies).
        public let trustStore: TrustStore?
    }

    /// The entries whose patterns match `host`, in order.
    public func matches(for host: String) -> [Match] {
        entries.enumerated().compactMap { index, entry in
            entry.pattern(matching: host).map { Match(index: index, entry: entry, pattern: $0) }
        }
    }

    /// The policy for `host`, or `nil` when no entry matches (the host is not pinned): every matching entry
    /// combined by ``SecurityPolicy/init(combining:)``.
    public func policy(for host: String) -> SecurityPolicy? {
        let matching = matches(for: host)
        return matching.isEmpty ? nil : SecurityPolicy(combining: matching)
    }

    /// The combined policy and the trust store for `host`, or `nil` when no entry matches.
    ///
    /// The store rule: an entry without a store names none and defers to the others; every entry that names
    /// one must name the same (equal by value) store, which then applies. Two different stores cannot both
    /// be honoured by one verification, and choosing either would silently drop the other's anchors, so
    /// that is refused rather than guessed.
    /// - Throws: ``SecurityError`` with code `invalidPolicy` when matching entries name different stores;
    ///   the message names the host and the patterns in conflict.
    public func resolution(for host: String) throws(SecurityError) -> Resolution? {
        let matching = matches(for: host)
        guard !matching.isEmpty else { return nil }
        let named = matching.filter { $0.entry.trustStore != nil }
        if let first = named.first, let other = named.first(where: { $0.entry.trustStore != first.entry.trustStore }) {
            throw SecurityError(
                .invalidPolicy,
                """
                \(host) is matched by policies with different trust stores (\(first.pattern) and \(other.pattern)); give them the \
                same CA file or make their hosts disjoint
                """
            )
        }
        return Resolution(matches: matching, policy: SecurityPolicy(combining: matching), trustStore: named.first?.entry.trustStore)
    }
}
