/// One check of a verified path (swift-certificates' `VerifierPolicy`): returns the reason it fails, naming
/// the certificate, or `nil`.
protocol ProfileRule: Sendable {
    /// The rule's name, as errors and `audit` show it (`webpki.eku_server_auth`).
    var name: String { get }
    /// The profiles that apply it.
    var profiles: Set<VerificationProfile> { get }
    /// Checks the path; `nil` when it satisfies the rule.
    func check(_ path: VerifiedPath) -> ProfileViolation?
}

extension ProfileRule {
    /// A violation by the certificate at `depth`, with this rule's name.
    func violation(_ path: VerifiedPath, depth: Int, _ message: String) -> ProfileViolation {
        ProfileViolation(rule: name, depth: depth, subject: path.chain[depth].subject, message: message)
    }
}

/// How a path breaks a profile rule: the rule, the certificate (depth from the leaf, subject) and why.
public struct ProfileViolation: Sendable, Hashable, CustomStringConvertible {
    /// The rule's name (`webpki.eku_server_auth`).
    public let rule: String
    /// The certificate's depth in the verified path (0 is the leaf).
    public let depth: Int
    /// Its subject (RFC 2253).
    public let subject: String
    /// What is wrong, for a person.
    public let message: String
    /// The rule is a Baseline Requirements one that `profile: rfc5280` does not apply.
    public internal(set) var acceptedByRFC5280 = false

    /// `rule webpki.eku_server_auth at depth 0 (CN=leaf): the leaf has no extended key usage …`.
    public var description: String {
        let lenient = acceptedByRFC5280 ? " (profile rfc5280 would accept it)" : ""
        return "rule \(rule) at depth \(depth) (\(subject)): \(message)\(lenient)"
    }
}

/// The path OpenSSL built and verified, as the rules see it.
struct VerifiedPath {
    /// Leaf first, then each issuer, ending at the anchor when OpenSSL reached one.
    let chain: [Certificate]
    /// How many certificates of ``chain``, from the leaf, the server sent (the rest came from the store).
    let servedCount: Int
    /// Whether the last certificate of ``chain`` is a trust anchor (from the store).
    let endsAtAnchor: Bool
    /// The host name or IP address checked, if any (no brackets, no trailing dot).
    let host: String?
    /// The maximum number of certificates in a path, anchor included; `nil` for no limit beyond OpenSSL's.
    let maximumDepth: Int?

    var leaf: Certificate { chain[0] }
}
