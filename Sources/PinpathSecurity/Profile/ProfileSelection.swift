/// Which ``VerificationProfile`` a policy applies: chosen by the anchor each path ends at (``auto``, the
/// default), or one forced for every path.
///
/// Under ``auto``, as browsers draw the line: a path that ends at an anchor of the system's public store is
/// held to ``VerificationProfile/webpki`` (the Baseline Requirements bind publicly trusted CAs); a path that
/// ends at an anchor the policy names (a CA file, pinned certificates, certificates given in code) is held to
/// ``VerificationProfile/rfc5280``, unless that anchor is public after all (see ``AppliedProfile``). What
/// applied, and why, is ``TrustEvaluation/appliedProfile``.
public struct ProfileSelection: Hashable, Sendable, CustomStringConvertible {
    /// The profile every path is held to, or `nil` for ``auto``.
    public let forced: VerificationProfile?

    /// The profile follows the anchor: the default.
    public static let auto = ProfileSelection(forced: nil)
    /// Every path is held to ``VerificationProfile/webpki``.
    public static let webpki = ProfileSelection(forced: .webpki)
    /// Every path is held to ``VerificationProfile/rfc5280``.
    public static let rfc5280 = ProfileSelection(forced: .rfc5280)

    /// A selection that forces `profile`.
    public init(_ profile: VerificationProfile) { self.init(forced: profile) }

    private init(forced: VerificationProfile?) { self.forced = forced }

    /// The name, as configured (`profile: auto`) and printed.
    public var description: String { forced?.name ?? "auto" }

    /// What this selection applies to paths verified against anchors from `origin`, for a person (what
    /// `check-config --effective` shows): `auto: rfc5280 for an anchor from ca_file (webpki when the system
    /// store vouches for it, or with no anchor)`.
    public func explanation(anchorsFrom origin: TrustStore.Origin) -> String {
        if let forced { return "\(forced) (forced)" }
        if origin == .system { return "auto: webpki (anchors from the system store)" }
        return "auto: rfc5280 for an anchor from \(origin) (webpki when the system store vouches for it, or with no anchor)"
    }

    /// How strict the selection is when policies combine: a forced `webpki` above `auto` (which may apply
    /// `webpki`), above a forced `rfc5280`.
    var strictness: Int {
        switch forced {
        case .webpki?: 2
        case nil: 1
        default: 0
        }
    }
}

extension ProfileSelection: RawRepresentable, CaseIterable {
    /// The selection named `rawValue` (`auto`, `webpki`, `rfc5280`), or `nil`: the form configurations and
    /// options use.
    public init?(rawValue: String) {
        if rawValue == "auto" {
            self = .auto
        } else if let profile = VerificationProfile(named: rawValue) {
            self.init(profile)
        } else {
            return nil
        }
    }

    /// The name.
    public var rawValue: String { description }

    /// `auto`, then every profile.
    public static var allCases: [ProfileSelection] { [.auto] + VerificationProfile.all.map(ProfileSelection.init) }
}
