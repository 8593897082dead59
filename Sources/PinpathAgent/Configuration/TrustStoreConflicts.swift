import PinpathSecurity
import PinpathYAML

extension ConfigurationDecoder {
    /// Reports each pair of policies whose `hosts` can match one host but whose `ca_file`s hold different
    /// certificates, at the later one's `ca_file`, naming both files and the patterns that meet.
    ///
    /// The rule for trust stores when several policies apply to a host: a policy without `ca_file` names no
    /// store and defers to the others; all that name one must name the same certificates. One verification
    /// cannot honour two stores, and picking either would silently drop the other's anchors, so that is a
    /// configuration error rather than a guess; it is checked here for every host the patterns could ever
    /// match, since a redirect may reach any of them.
    /// - Parameters:
    ///   - policies: the valid policies, in file order.
    ///   - declared: every `policies:` entry as read, for the `ca_file` positions.
    func reportTrustStoreConflicts(_ policies: [PolicyConfiguration], declared: [(name: String, key: Node, value: Node)]) {
        let withStores = policies.filter { $0.trustStore != nil }
        for (index, later) in withStores.enumerated() {
            for earlier in withStores[..<index] where earlier.trustStore != later.trustStore {
                guard let (theirs, mine) = earlier.hostPolicy.overlap(with: later.hostPolicy) else { continue }
                let entry = declared.first { $0.name == later.name }
                let node = entry.flatMap { $0.value.mapping?["ca_file"] } ?? entry?.key
                report(
                    .refusedPolicy, at: node, Self.keyPath(Self.keyPath("policies", later.name), "ca_file"),
                    """
                    \(later.caFile ?? "?") differs from \(earlier.caFile ?? "?") (policy \"\(earlier.name)\"), and both policies \
                    apply to hosts that \(mine) and \(theirs) both match; give them the same ca_file or make their hosts disjoint
                    """
                )
                break
            }
        }
    }
}
