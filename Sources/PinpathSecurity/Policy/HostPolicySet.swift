import PinpathSupport

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

    /// Matching entries that name different trust stores: one verification cannot honour both, and choosing
    /// either would silently drop the other's anchors, so the host is refused rather than guessed.
    public struct Conflict: Error, Sendable, CustomStringConvertible {
        /// The host, as asked (IPv6 brackets removed).
        public let host: String
        /// The first matching entry that names a trust store.
        public let first: Match
        /// The first matching entry after it that names a different one.
        public let second: Match

        /// Always `invalidPolicy`: the code a ``SecurityError`` for this conflict has.
        public var code: SecurityError.Code { .invalidPolicy }

        /// A sentence naming the host and the patterns in conflict, and what to do.
        public var message: String {
            """
            \(host) is matched by policies with different trust stores (\(first.pattern) and \(second.pattern)); give them the \
            same CA file or make their hosts disjoint
            """
        }

        /// The message.
        public var description: String { message }
    }

    /// The entries whose patterns match `host` (a bare name or address), in order.
    func matches(for host: String) -> [Match] {
        entries.enumerated().compactMap { index, entry in
            entry.pattern(matching: host).map { Match(index: index, entry: entry, pattern: $0) }
        }
    }

    /// What applies to `host`: the matching entries, their policies combined into the strictest
    /// (``SecurityPolicy/init(combining:)``) and their one trust store; `nil` when no entry matches (the host
    /// is not pinned). The one place the choice is made: ``Session`` makes it for each request, each redirect
    /// hop and each proxy, and the agent once per endpoint when it loads its configuration, so all agree.
    ///
    /// The store rule: an entry without a store names none and defers to the others; every entry that names
    /// one must name the same (equal by value) store, which then applies.
    /// - Parameter host: a host as a URL spells it; the brackets around an IPv6 literal are ignored.
    /// - Throws: ``Conflict`` when matching entries name different stores.
    public func resolution(for host: String) throws(Conflict) -> Resolution? {
        guard !entries.isEmpty else { return nil }
        let host = URLHost.withoutBrackets(host)
        let matching = matches(for: host)
        guard !matching.isEmpty else { return nil }
        let named = matching.filter { $0.entry.trustStore != nil }
        if let first = named.first, let second = named.first(where: { $0.entry.trustStore != first.entry.trustStore }) {
            throw Conflict(host: host, first: first, second: second)
        }
        return Resolution(matches: matching, policy: SecurityPolicy(combining: matching), trustStore: named.first?.entry.trustStore)
    }
}
