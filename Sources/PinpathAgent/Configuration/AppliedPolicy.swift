import PinpathSecurity

/// The security policy an endpoint's TLS handshakes are held to, resolved at load time from its `policy`
/// key or, without one, from the `hosts` of the configured policies.
public struct AppliedPolicy: Sendable {
    /// The configured policies it came from: the one the endpoint names, or every policy whose `hosts`
    /// match the URL's host, in file order.
    public let names: [String]
    /// The policy to evaluate: the named one, or the matching ones united as ``HostPolicySet`` unites them
    /// (the first gives the mode and flags, the pins of all are accepted).
    public let policy: SecurityPolicy
    /// The CA file of the first of ``names``, resolved; `nil` means the system store.
    public let caFile: String?
    /// The store read from ``caFile``; `nil` means the system store.
    public let trustStore: TrustStore?

    /// For an explicit `policy:` reference.
    init(_ configured: PolicyConfiguration) {
        names = [configured.name]
        policy = configured.policy
        caFile = configured.caFile
        trustStore = configured.trustStore
    }

    /// The policies whose hosts match `host`, or `nil` when none does (the endpoint is not pinned and gets
    /// plain chain and host-name validation).
    init?(matching host: String, among policies: [PolicyConfiguration]) {
        let matching = policies.filter { $0.hostPolicy.pattern(matching: host) != nil }
        guard let first = matching.first, let policy = HostPolicySet(matching.map(\.hostPolicy)).policy(for: host) else {
            return nil
        }
        names = matching.map(\.name)
        self.policy = policy
        caFile = first.caFile
        trustStore = first.trustStore
    }
}
