/// An authority key identifier holds a keyIdentifier and nothing else (no authorityCertIssuer, no
/// authorityCertSerialNumber: BR 7.1.2.1.3 for roots, and the AKI tables of 7.1.2 for the other kinds), and a
/// root's names its own key (equal to its subject key identifier). RFC 5280 allows the other fields; OpenSSL
/// compares the fields it finds with the issuer's, and takes a root whose AKI names another key for an
/// intermediate, which a partial chain then trusts as an anchor.
struct AuthorityKeyIdentifierForm: ProfileRule {
    let name = "webpki.authority_key_identifier_form"
    let profiles: Set<VerificationProfile> = [.webpki]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        guard !path.leafIsItsOwnIssuer else { return .meetsRule }
        for (depth, certificate) in path.chain.enumerated() {
            guard let identifier = certificate.authorityKeyIdentifier else { continue }
            guard identifier.hasKeyIdentifier else {
                return fails(path, depth: depth, "the authority key identifier has no keyIdentifier")
            }
            if identifier.hasIssuer || identifier.hasSerial {
                return fails(
                    path, depth: depth,
                    "the authority key identifier names the issuer's name or serial number (only a keyIdentifier is allowed)")
            }
            if path.isAnchor(depth) && certificate.isSelfIssued && certificate.namesAnotherKeyThanItsOwn {
                return fails(path, depth: depth, "the root's authority key identifier differs from its subject key identifier")
            }
        }
        return .meetsRule
    }
}
