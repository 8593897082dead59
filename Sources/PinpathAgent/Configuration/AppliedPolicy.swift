import PinpathHTTP
import PinpathSecurity
import PinpathSupport

/// The security policy an endpoint's TLS handshakes are held to, resolved at load time from its `policy`
/// key and the `hosts` of the configured policies: every one that applies, combined into the strictest
/// (``HostPolicySet`` and `SecurityPolicy(combining:)`), so that naming a `mode: none` policy, or a broad one
/// matching first, never cancels the pins another policy has for the host.
public struct AppliedPolicy: Sendable, Equatable {
    /// Why one configured policy applies.
    public struct Source: Sendable, Equatable {
        /// The policy's name.
        public let name: String
        /// The `hosts` pattern that matched the endpoint's host; `nil` when the endpoint names the policy.
        public let pattern: HostPattern?
    }

    /// The configured policies it came from, with why: the one the endpoint names first, then every other
    /// policy whose `hosts` match the URL's host, in file order.
    public let sources: [Source]
    /// The combined policy to evaluate.
    public let policy: SecurityPolicy
    /// The CA file the policies name (all that name one name the same certificates: see ``Conflict``), resolved; `nil`
    /// means the system store.
    public let caFile: String?
    /// The store read from ``caFile``; `nil` means the system store.
    public let trustStore: TrustStore?

    /// The names of ``sources``.
    public var names: [String] { sources.map(\.name) }

    /// Why the policies that apply to a host cannot be combined, for the configuration problem.
    struct Conflict: Error {
        /// The sentence after the key path.
        let description: String
        /// Whether the policy the endpoint names is involved (otherwise the policies' own check reports it).
        let involvesNamedPolicy: Bool

        /// Two policies name CA files with different certificates: one verification cannot honour both, and
        /// choosing either would silently drop the other's anchors.
        init(_ first: PolicyConfiguration, _ second: PolicyConfiguration, named: String?) {
            description =
                """
                policies \"\(first.name)\" (ca_file \(first.caFile ?? "?")) and \"\(second.name)\" (ca_file \
                \(second.caFile ?? "?")) both apply to this host with different CA files; give them the same ca_file or make their \
                hosts disjoint
                """
            involvesNamedPolicy = named != nil && (first.name == named || second.name == named)
        }

        /// Another reason, in PinpathSecurity's words.
        init(_ message: String) {
            description = message
            involvesNamedPolicy = true
        }

        /// The host is no host name or address a policy could name.
        init(unmatchableHost host: String) {
            description = "the host \(host) cannot be matched by a policy, so its policy would not apply; use a host name or an address"
            involvesNamedPolicy = true
        }
    }

    /// What applies to an https endpoint on `host`, or `nil` when nothing does (it is not pinned and gets
    /// plain chain and host-name validation against the system store).
    /// - Parameters:
    ///   - named: the policy the endpoint's `policy:` names, if any; it applies whatever its `hosts`.
    ///   - policies: every valid configured policy, in file order.
    /// - Throws: ``Conflict`` when two of them name different CA files, or the named one cannot apply to `host`.
    init?(host: String, named: PolicyConfiguration?, among policies: [PolicyConfiguration]) throws(Conflict) {
        // The named policy applies whatever its `hosts`: it enters the choice as an exact pattern for the
        // host, first; the others enter with their own patterns, in file order. The choice itself is the one
        // the request core makes for every request (``HostPolicyChoice``).
        var candidates: [(configuration: PolicyConfiguration, entry: HostPolicy, named: Bool)] = []
        if let named {
            guard let exact = try? HostPattern(parsing: URLHost.withoutBrackets(host)) else { throw Conflict(unmatchableHost: host) }
            candidates.append((named, HostPolicy(patterns: [exact], policy: named.policy, trustStore: named.trustStore), true))
        }
        for configured in policies where configured.name != named?.name {
            candidates.append((configured, configured.hostPolicy, false))
        }
        let set = HostPolicySet(candidates.map(\.entry))
        let resolution: HostPolicySet.Resolution?
        do {
            resolution = try HostPolicyChoice.resolution(forURLHost: host, in: set)
        } catch {
            // Name the policies and their CA files, as the configuration spells them.
            let withStores = HostPolicyChoice.matches(forURLHost: host, in: set).map { candidates[$0.index].configuration }
                .filter { $0.trustStore != nil }
            if let first = withStores.first, let other = withStores.first(where: { $0.trustStore != first.trustStore }) {
                throw Conflict(first, other, named: named?.name)
            }
            throw Conflict(error.message)
        }
        // Every host the named policy's exact pattern was parsed from should match it; one that does not would
        // drop the policy the endpoint names.
        guard let resolution else {
            if named != nil { throw Conflict(unmatchableHost: host) }
            return nil
        }
        guard named == nil || resolution.matches.first?.index == 0 else { throw Conflict(unmatchableHost: host) }
        sources = resolution.matches.map { match in
            let candidate = candidates[match.index]
            return Source(name: candidate.configuration.name, pattern: candidate.named ? nil : match.pattern)
        }
        policy = resolution.policy
        caFile = resolution.matches.lazy.map { candidates[$0.index].configuration }.first { $0.trustStore != nil }?.caFile
        trustStore = resolution.trustStore
    }
}
