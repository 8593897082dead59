import PinpathSecurity
import PinpathSupport

/// Chooses the security policy for a host: every entry of a ``HostPolicySet`` whose patterns match it,
/// combined into the strictest, with the one trust store they name.
///
/// The one place the choice is made: ``Session`` makes it for each request and each redirect hop, and the
/// agent makes it once per endpoint when it loads its configuration, so that both always agree.
public enum HostPolicyChoice {
    /// The entries of `policies` that match the URL host `host` (IPv6 brackets allowed), in order.
    public static func matches(forURLHost host: String, in policies: HostPolicySet) -> [HostPolicySet.Match] {
        policies.matches(for: URLHost.withoutBrackets(host))
    }

    /// What applies to the URL host `host` (IPv6 brackets allowed), or `nil` when no entry matches.
    /// - Throws: ``SecurityError`` with code `invalidPolicy` when the matching entries name different trust
    ///   stores (``HostPolicySet/resolution(for:)``).
    public static func resolution(forURLHost host: String, in policies: HostPolicySet) throws(SecurityError) -> HostPolicySet.Resolution? {
        guard !policies.entries.isEmpty else { return nil }
        return try policies.resolution(for: URLHost.withoutBrackets(host))
    }
}
