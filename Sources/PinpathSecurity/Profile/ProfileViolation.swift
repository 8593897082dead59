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
    /// The rule is a Baseline Requirements one that the `rfc5280` profile does not apply (which `auto` gives
    /// a path to an anchor the policy names, and `profile: rfc5280` forces).
    public internal(set) var acceptedByRFC5280 = false

    /// `rule webpki.eku_server_auth at depth 0 (CN=leaf): the leaf has no extended key usage …`.
    public var description: String {
        let lenient = acceptedByRFC5280 ? " (a Baseline Requirements rule, not in rfc5280)" : ""
        return "rule \(rule) at depth \(depth) (\(subject)): \(message)\(lenient)"
    }
}
