/// The profile a verification applied and why, as printed: `rfc5280 (anchor from ca_file)`,
/// `webpki (anchor from the system store)`, `webpki (profile: webpki)`.
///
/// Under ``ProfileSelection/auto`` an attacker must not be able to pick the weaker profile, so `rfc5280` needs
/// an anchor the policy names that is not public: an anchor the system store also holds, or that a
/// certificate of the system store issued (directly or through certificates the server sent), is public and
/// gets `webpki` whatever named it (a CA file that copies the system bundle, a pinned public root or leaf). A
/// path that reaches no anchor (invalid certificates allowed) gets `webpki`: nothing the policy names vouches
/// for it. What the server sends can only make an anchor public; leaving certificates out keeps what is found
/// without them (a named intermediate of a public CA whose issuers are not sent stays `rfc5280`).
public struct AppliedProfile: Sendable, Hashable, CustomStringConvertible {
    /// Why a profile applied, as an extensible set of values.
    public struct Basis: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in JSON (`named_anchor`).
        public var description: String { name }
        /// The policy (or the caller) forced the profile.
        public static let forced = Basis(name: "forced")
        /// The path ends at an anchor of the system store.
        public static let systemAnchor = Basis(name: "system_anchor")
        /// The path ends at an anchor the policy names, which the system store does not vouch for.
        public static let namedAnchor = Basis(name: "named_anchor")
        /// The path ends at an anchor the policy names that is public: the system store holds or issued it.
        public static let publicAnchor = Basis(name: "public_anchor")
        /// The path ends at no anchor (or verification stopped before one was found).
        public static let noAnchor = Basis(name: "no_anchor")
    }

    /// The profile whose rules the path was held to.
    public let profile: VerificationProfile
    /// Why.
    public let basis: Basis
    /// Where the anchors came from, when the basis is an anchor.
    public let anchorOrigin: TrustStore.Origin?

    /// Why, for a person: `anchor from ca_file`.
    public var reason: String {
        switch basis {
        case .forced: "profile: \(profile)"
        case .noAnchor: "no anchor"
        case .publicAnchor: "anchor from \(anchorOrigin?.description ?? "?"), public: the system store vouches for it"
        default: "anchor from \(anchorOrigin?.description ?? "?")"
        }
    }

    /// `rfc5280 (anchor from ca_file)`.
    public var description: String { "\(profile) (\(reason))" }
}

extension ProfileSelection {
    /// Runs `verify` with the profile this selection applies to the path it builds against `anchors`, and
    /// records which one applied and why in the result (``ChainVerification/appliedProfile``).
    ///
    /// Under ``auto`` the path is known only once OpenSSL built it, and the profile also sets how OpenSSL
    /// checks the host: the chain runs once with the profile `anchors`' origin suggests, and once more with
    /// `webpki` when the path it built turns out to need it. Both runs build the same path (the profile
    /// changes no look-up), so the second's anchor is the first's.
    /// - Parameter served: what the server sent, leaf first: certificates above the anchor it may have sent
    ///   can show that the anchor is public.
    func verify(
        _ served: [Certificate], against anchors: TrustStore, _ verify: (VerificationProfile) throws -> ChainVerification
    ) throws -> ChainVerification {
        if let forced {
            var verification = try verify(forced)
            verification.appliedProfile = AppliedProfile(profile: forced, basis: .forced, anchorOrigin: nil)
            return verification
        }
        let provisional: VerificationProfile = anchors.origin == .system ? .webpki : .rfc5280
        var verification = try verify(provisional)
        let applied = try AppliedProfile.choosing(for: verification, anchoredBy: anchors, served: served)
        if applied.profile != provisional { verification = try verify(applied.profile) }
        verification.appliedProfile = applied
        return verification
    }
}

extension AppliedProfile {
    /// The profile ``ProfileSelection/auto`` applies to the path `verification` built against `anchors`.
    static func choosing(
        for verification: ChainVerification, anchoredBy anchors: TrustStore, served: [Certificate]
    ) throws -> AppliedProfile {
        // With partial chains OpenSSL trusts the path at the first certificate from the leaf the store holds
        // (a pinned leaf, a trusted intermediate), and may have built the chain on above it.
        guard let anchor = try verification.chain.first(where: anchors.holds) else {
            return AppliedProfile(profile: .webpki, basis: .noAnchor, anchorOrigin: nil)
        }
        if anchors.origin == .system {
            return AppliedProfile(profile: .webpki, basis: .systemAnchor, anchorOrigin: anchors.origin)
        }
        if try PublicAnchors.vouch(for: anchor, servedAlongside: served) {
            return AppliedProfile(profile: .webpki, basis: .publicAnchor, anchorOrigin: anchors.origin)
        }
        return AppliedProfile(profile: .rfc5280, basis: .namedAnchor, anchorOrigin: anchors.origin)
    }
}
