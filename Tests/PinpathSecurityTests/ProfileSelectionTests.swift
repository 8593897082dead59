import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// The selection of a profile as a value: its names, how policies that match one host combine it, and how
/// stores of different origins compare (pure logic; the choice on real chains is ProfileByAnchorTests').
@Suite("Profile selection")
struct ProfileSelectionTests {
    @Test("auto, webpki and rfc5280 by name, auto first; anything else is no selection; auto is the default")
    func names() throws {
        #expect(ProfileSelection.allCases.map(\.rawValue) == ["auto", "webpki", "rfc5280"])
        #expect(ProfileSelection(rawValue: "auto") == .auto && ProfileSelection.auto.forced == nil)
        #expect(ProfileSelection(rawValue: "webpki") == ProfileSelection(.webpki))
        #expect(ProfileSelection(rawValue: "rfc5280")?.forced == .rfc5280)
        for wrong in ["", "Auto", "browser", "rfc5820", "auto "] { #expect(ProfileSelection(rawValue: wrong) == nil) }
        #expect(try SecurityPolicy(mode: .none).profile == .auto)
        #expect(try SecurityPolicy.oneOff().profile == .auto)
    }

    /// A policy for `host` whose profile selection is `profile`.
    static func entry(_ profile: ProfileSelection) throws -> HostPolicy {
        HostPolicy(patterns: [try HostPattern(parsing: "a.test")], policy: try SecurityPolicy(mode: .none, profile: profile))
    }

    @Test(
        "Policies matching one host combine to the strictest selection: forced webpki, then auto, then forced rfc5280",
        arguments: [
            ([ProfileSelection.rfc5280, .auto], ProfileSelection.auto), ([.auto, .rfc5280], .auto), ([.rfc5280, .webpki], .webpki),
            ([.auto, .webpki], .webpki), ([.webpki, .auto], .webpki), ([.rfc5280, .rfc5280], .rfc5280), ([.auto, .auto], .auto),
        ])
    func combining(_ selections: [ProfileSelection], expected: ProfileSelection) throws {
        let set = HostPolicySet(try selections.map(Self.entry))
        #expect(try set.resolution(for: "a.test")?.policy.profile == expected)
    }

    @Test("Stores compare by origin too: the same certificate pinned and in a CA file are reported differently")
    func origins() throws {
        let certificates = try TestPKI.shared.chain(["valid"])
        #expect(try TrustStore(certificates: certificates) == TrustStore(certificates: certificates))
        #expect(try TrustStore(certificates: certificates) != TrustStore.pinned(certificates))
        #expect(try TrustStore(certificates: certificates).origin == .certificates)
        #expect(try TrustStore.pinned(certificates).origin == .pinnedCertificates)
        #expect(try TestPKI.shared.trustStore().origin == .caFile)
        #expect(TrustStore.Origin.system.description == "the system store")
    }

    @Test("What check-config says a selection means for a store of each origin")
    func explanations() {
        #expect(ProfileSelection.auto.explanation(anchorsFrom: .system) == "auto: webpki (anchors from the system store)")
        #expect(
            ProfileSelection.auto.explanation(anchorsFrom: .caFile)
                == "auto: rfc5280 for an anchor from ca_file (webpki when the system store vouches for it, or with no anchor)")
        #expect(ProfileSelection.rfc5280.explanation(anchorsFrom: .system) == "rfc5280 (forced)")
    }
}
