/// `rfc5280.san_dns_syntax`: every dNSName of the leaf is in the preferred name syntax (RFC 5280 §4.2.1.6,
/// ``DNSNameSyntax``): ASCII letters, digits and hyphens, no underscore, no empty label, labels of at most 63
/// characters; a wildcard only as the whole leftmost label (`*.example.com`, never `w*.example.com`,
/// `*.*.example.com` or `www.*.example.com`). OpenSSL matches the host against any string.
struct SubjectAlternativeNameDNSSyntax: ProfileRule {
    let name = "rfc5280.san_dns_syntax"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for case .dns(let bytes) in path.leafSubjectAlternativeNames?.value ?? [] {
            if let problem = DNSNameSyntax.problem(inPresented: bytes) {
                return fails(path, depth: 0, "the DNS SAN \(DNSNameSyntax.quoted(bytes)) \(problem)")
            }
        }
        return .meetsRule
    }
}
