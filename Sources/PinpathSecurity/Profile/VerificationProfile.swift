/// The rules a verified path must also satisfy, beyond what OpenSSL checks (path building, signatures,
/// dates, basic constraints): a list of ``ProfileRule``s (``ProfileRules/all``), each checked on the path OpenSSL built.
///
/// - ``webpki``: RFC 5280 plus the CA/Browser Forum Baseline Requirements for TLS server certificates, as
///   browsers, Go and rustls-webpki apply them: what a path to the system's public store is held to.
/// - ``rfc5280``: RFC 5280 alone: what a path to an anchor the policy names is held to (private PKIs that
///   break the Baseline Requirements: no EKU, CN-only…).
///
/// A policy chooses between them per path (``ProfileSelection``); a profile here is always a concrete one.
public struct VerificationProfile: Hashable, Sendable, CustomStringConvertible {
    /// The name, as configured (`profile: webpki`) and printed.
    public let name: String

    /// RFC 5280 and the Baseline Requirements.
    public static let webpki = VerificationProfile(name: "webpki")
    /// RFC 5280 only.
    public static let rfc5280 = VerificationProfile(name: "rfc5280")
    /// Every profile, for parsing names.
    public static let all: [VerificationProfile] = [.webpki, .rfc5280]

    /// The profile named `name`, or `nil`.
    public init?(named name: String) {
        guard let found = Self.all.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    private init(name: String) { self.name = name }

    public var description: String { name }

    /// The rules of this profile, in the order they are checked (filtered once per profile, not per evaluation).
    var rules: [any ProfileRule] { Self.rulesByProfile[self] ?? [] }

    private static let rulesByProfile = Dictionary(
        uniqueKeysWithValues: all.map { profile in (profile, ProfileRules.all.filter { $0.profiles.contains(profile) }) })

    /// The first rule the path breaks, or `nil`. A violation of a Baseline Requirements rule says whether
    /// the `rfc5280` profile would accept the path.
    func firstViolation(on path: VerifiedPath) throws -> ProfileViolation? {
        var path = path
        for rule in rules {
            guard case .failsToMeetRule(var violation) = try rule.evaluate(&path) else { continue }
            violation.acceptedByRFC5280 = self == .webpki && !rule.profiles.contains(.rfc5280)
            return violation
        }
        return nil
    }
}
