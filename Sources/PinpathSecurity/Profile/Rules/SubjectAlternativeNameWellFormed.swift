/// `rfc5280.san_well_formed`: the leaf's subject alternative name extension, when present, decodes and holds
/// at least one name (RFC 5280 §4.2.1.6: `SIZE (1..MAX)`); an iPAddress is an address of 4 or 16 bytes, not
/// a range; an rfc822Name is one mailbox (`local@domain`); and a leaf with an empty subject names itself in
/// a critical SAN. OpenSSL ignores a SAN it cannot decode (the host check then falls to the subject) and
/// matches a malformed name against constraints as if it were one.
struct SubjectAlternativeNameWellFormed: ProfileRule {
    let name = "rfc5280.san_well_formed"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        let leaf = path.leaf
        guard let san = path.leafSubjectAlternativeNames else {
            guard leaf.hasEmptySubject else { return .meetsRule }
            return fails(path, depth: 0, "the subject is empty and there is no subject alternative name")
        }
        guard let names = san.value else {
            return fails(path, depth: 0, "the subject alternative name extension cannot be decoded")
        }
        if names.isEmpty { return fails(path, depth: 0, "the subject alternative name extension is empty") }
        if leaf.hasEmptySubject && !san.critical {
            return fails(path, depth: 0, "the subject is empty but the subject alternative name is not critical")
        }
        for name in names {
            switch name {
            case .ipAddress(let bytes) where bytes.count != 4 && bytes.count != 16:
                return fails(path, depth: 0, "an IP address SAN has \(bytes.count) bytes (4 or 16 expected)")
            case .email(let bytes) where !Self.isMailbox(bytes):
                return fails(path, depth: 0, "the email SAN \(DNSNameSyntax.quoted(bytes)) is not one mailbox")
            default:
                continue
            }
        }
        return .meetsRule
    }

    /// `local@domain` with exactly one `@` and both parts present (RFC 5280 §4.2.1.6 uses RFC 5321's
    /// Mailbox, whose quoted local parts certificates do not use).
    static func isMailbox(_ bytes: [UInt8]) -> Bool {
        let parts = bytes.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && DNSNameSyntax.problem(inConstraint: Array(parts[1])) == nil
            && !parts[1].isEmpty
    }
}
