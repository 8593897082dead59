/// `rfc5280.name_constraints_well_formed`: every name constraints extension of the path's CA certificates
/// decodes, has at least one non-empty subtree (RFC 5280 §4.2.1.10: "MUST NOT be an empty sequence",
/// `GeneralSubtrees ::= SEQUENCE SIZE (1..MAX)`; Baseline Requirements §7.1.2.5.2), and each base is well
/// formed: a dNSName in the preferred syntax without a leading period or wildcard (``DNSNameSyntax``), an
/// iPAddress of an address and a contiguous mask (8 or 32 bytes), an rfc822Name with at most one `@`.
/// OpenSSL applies malformed constraints as best it can (an empty extension constrains nothing, a leading
/// period means "subdomains", a bare address is never matched and so never excludes anything).
struct NameConstraintsWellFormed: ProfileRule {
    let name = "rfc5280.name_constraints_well_formed"
    let profiles: Set<VerificationProfile> = [.webpki, .rfc5280]

    func evaluate(_ path: inout VerifiedPath) -> RuleResult<ProfileViolation> {
        for (depth, certificate) in path.chain.enumerated().dropFirst() {
            guard let constraints = certificate.nameConstraintsExtension else { continue }
            guard let value = constraints.value else {
                return fails(path, depth: depth, "the name constraints extension cannot be decoded")
            }
            if (value.permitted ?? []).isEmpty && (value.excluded ?? []).isEmpty {
                return fails(path, depth: depth, "the name constraints extension has no subtree")
            }
            for (kind, subtrees) in [("permitted", value.permitted), ("excluded", value.excluded)] {
                guard let subtrees else { continue }
                if subtrees.isEmpty { return fails(path, depth: depth, "the \(kind) subtrees are present but empty") }
                for base in subtrees {
                    if let problem = Self.problem(in: base) {
                        return fails(path, depth: depth, "a \(kind) name constraint \(problem)")
                    }
                }
            }
        }
        return .meetsRule
    }

    static func problem(in base: GeneralName) -> String? {
        switch base {
        case .dns(let bytes):
            return DNSNameSyntax.problem(inConstraint: bytes).map { "\(DNSNameSyntax.quoted(bytes)) \($0)" }
        case .ipAddress(let bytes):
            guard bytes.count == 8 || bytes.count == 32 else {
                return "on IP addresses has \(bytes.count) bytes (an address and a mask: 8 or 32 expected)"
            }
            let mask = bytes[(bytes.count / 2)...]
            return isContiguousMask(mask) ? nil : "on IP addresses has a mask that is not a prefix"
        case .email(let bytes):
            let at = bytes.filter { $0 == UInt8(ascii: "@") }.count
            return at > 1 ? "on email \(DNSNameSyntax.quoted(bytes)) has more than one @" : nil
        case .uri, .other:
            return nil
        }
    }

    /// Ones then zeros: a CIDR prefix (`255.255.255.0`, never `255.0.255.0`).
    static func isContiguousMask(_ mask: ArraySlice<UInt8>) -> Bool {
        var seenZero = false
        for byte in mask {
            for bit in (0..<8).reversed() {
                let set = byte & (1 << bit) != 0
                if set && seenZero { return false }
                if !set { seenZero = true }
            }
        }
        return true
    }
}
