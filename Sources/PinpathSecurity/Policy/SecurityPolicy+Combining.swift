import FoundationEssentials

extension SecurityPolicy {
    /// The strictest policy the matching entries of a ``HostPolicySet`` allow together, so that a broad
    /// `mode: none` entry never cancels a narrower entry's pins:
    /// - mode: the strictest present (`certificate` > `public_key` > `none`); pins and pinned certificates
    ///   of all entries united (OkHttp's rule: any pinned key of the host is accepted);
    /// - enforce: if any pinning entry enforces (report-only only when every pinning entry is);
    /// - validates domain name: if any entry validates it; allow invalid certificates: only if all allow;
    /// - expires: the latest expiry of the pinning entries, never if one of them never expires;
    /// - profile: the strictest selection present (a forced `webpki`, then `auto`, then a forced `rfc5280`);
    ///   maximum chain depth: the smallest given;
    /// - CRLs: those of all entries united; revocation: the strictest mode present; OCSP soft fail only if every
    ///   entry asking responders allows it;
    /// - noted host name and include-subdomains (for reports): the first pinning entry's pattern, else the
    ///   first entry's.
    ///
    /// The entries were each accepted by the throwing initializer; what combining them yields is no weaker
    /// than any of them, so it needs no new check.
    /// - Parameter matches: the matching entries, in configuration order; not empty.
    init(combining matches: [HostPolicySet.Match]) {
        let policies = matches.map(\.entry.policy)
        let pinning = policies.filter { $0.mode != .none }
        var certificates: [Certificate] = []
        for certificate in policies.flatMap(\.pinnedCertificates) where !certificates.contains(certificate) {
            certificates.append(certificate)
        }
        mode = policies.map(\.mode).max { $0.strictness < $1.strictness } ?? .none
        pins = policies.reduce(into: Set()) { $0.formUnion($1.pins) }
        pinnedCertificates = certificates
        allowInvalidCertificates = policies.allSatisfy(\.allowInvalidCertificates)
        validatesDomainName = policies.contains(where: \.validatesDomainName)
        enforce = pinning.isEmpty ? true : pinning.contains(where: \.enforce)
        expires = pinning.contains { $0.expires == nil } ? nil : pinning.compactMap(\.expires).max()
        profile = policies.map(\.profile).max { $0.strictness < $1.strictness } ?? .auto
        maximumChainDepth = policies.compactMap(\.maximumChainDepth).min()
        crls = policies.flatMap(\.crls).reduce(into: []) { united, crl in if !united.contains(crl) { united.append(crl) } }
        revocation = policies.map(\.revocation).max { $0.strictness < $1.strictness } ?? .none
        let askingResponders = policies.filter { $0.revocation == .ocsp }
        ocspSoftFail = revocation == .ocsp && askingResponders.allSatisfy(\.ocspSoftFail)
        let noted = matches.first { $0.entry.policy.mode != .none } ?? matches[0]
        notedHostname = noted.pattern.description
        includeSubdomains = noted.entry.includeSubdomains || noted.pattern.depth == .anyLabels
    }
}
