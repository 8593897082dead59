/// `rfc5280.name_constraints_wildcards`: a wildcard DNS name of the leaf stands for every name it can match,
/// so it must not reach into an excluded subtree: `*.example.com` under an excluded `bad.example.com` is
/// rejected, because it matches `bad.example.com`. OpenSSL compares the wildcard as a plain string, and
/// `*.example.com` is not within `bad.example.com`. The leaf's DNS names are its dNSName SANs or, when it
/// has none, its commonNames that look like host names (as OpenSSL's own constraint check takes them).
/// Permitted subtrees need nothing more: OpenSSL already refuses `*.example.com` under a permitted
/// `www.example.com` and accepts it under `example.com`.
struct NameConstraintsOnWildcards: ProfileRule {
    let name = "rfc5280.name_constraints_wildcards"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        // Each wildcard as presented (for the message) with its domain lowercased (for the comparison).
        let wildcards = Self.dnsNames(of: &path).compactMap { name -> (name: [UInt8], domain: [UInt8])? in
            name.starts(with: Array("*.".utf8)) ? (name, Array(name.dropFirst(2)).map(Self.lowercased)) : nil
        }
        guard !wildcards.isEmpty else { return .meetsRule }
        for (depth, certificate) in path.chain.enumerated().dropFirst() {
            for case .dns(let excluded) in certificate.nameConstraintsExtension?.value?.excluded ?? [] {
                let subtree = excluded.map(Self.lowercased)
                for wildcard in wildcards where Self.isOneLabelBelow(subtree, wildcard.domain) {
                    return fails(
                        path, depth: depth,
                        "the leaf's wildcard \(DNSNameSyntax.quoted(wildcard.name)) matches the excluded subtree "
                            + DNSNameSyntax.quoted(excluded))
                }
            }
        }
        return .meetsRule
    }

    /// Whether `subtree` is `label.domain` for a single label: the names `*.domain` can match.
    static func isOneLabelBelow(_ subtree: [UInt8], _ domain: [UInt8]) -> Bool {
        guard subtree.count > domain.count + 1, subtree.hasSuffix([UInt8(ascii: ".")] + domain) else { return false }
        return !subtree.dropLast(domain.count + 1).contains(UInt8(ascii: "."))
    }

    static func dnsNames(of path: inout VerifiedPath) -> [[UInt8]] {
        let sans = (path.leafSubjectAlternativeNames?.value ?? []).compactMap { name -> [UInt8]? in
            if case .dns(let bytes) = name { return bytes }
            return nil
        }
        if !sans.isEmpty { return sans }
        return path.leaf.commonNames.filter { DNSNameSyntax.problem(inPresented: $0) == nil && $0.contains(UInt8(ascii: ".")) }
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}

extension Array where Element == UInt8 {
    fileprivate func hasSuffix(_ suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
