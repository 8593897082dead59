/// Every rule pinpath checks beyond OpenSSL, each in its own file under `Rules/`. Adding a rule touches its
/// file and this list.
enum ProfileRules {
    static let all: [any ProfileRule] = [
        // Certificate rules: depth, versions, serials, basic constraints, usages, key identifiers, AIA, policy
        // constraints, keys (cheapest first; each reads OpenSSL's cached extension data).
        MaximumDepth(), CertificateVersion(), SerialNumber(), LeafNotCertificateAuthority(), LeafServerAuthUsage(),
        RootWithoutExtendedKeyUsage(), AuthorityKeyIdentifierPresent(), AuthorityKeyIdentifierForm(),
        AuthorityInformationAccess(), PolicyConstraintsCritical(), PublicKeyAlgorithm(),
        // Names (the leaf's SAN and subject), then name constraints.
        SubjectAlternativeNameWellFormed(), SubjectAlternativeNameDNSSyntax(), SubjectAlternativeNameRequired(),
        SubjectAlternativeNameNotCritical(), CommonNameInSubjectAlternativeNames(), WildcardNotOverPublicSuffix(),
        NameConstraintsOnlyOnCAs(), NameConstraintsWellFormed(), NameConstraintsCritical(),
        NameConstraintsOnWildcards(),
    ]
}
