import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Paths OpenSSL alone gets wrong: another path when the first fails, an anchor whose issuer names another CA,
/// and the last second of a validity period. Each through the public `SecurityPolicy.evaluate` in mode none,
/// as an external harness calls it, with chains generated for the case.
@Suite("Path building")
struct PathBuildingTests {
    static let pki = NamesPKI.shared

    static func evaluate(
        _ served: [Certificate], anchors: [Certificate], host: String, at time: Date? = nil
    ) throws -> TrustEvaluation {
        try SecurityPolicy(mode: .none).evaluate(
            servedChain: served, host: host, trustStore: TrustStore(certificates: anchors), verificationTime: time)
    }

    /// Two certificates for one intermediate key under one name: `bad` first, as the server sends them, then
    /// `good`. OpenSSL takes the first issuer it finds and stops at the error there.
    @Test("A sent issuer whose path fails (name constraints, an unknown root) gives way to another sent issuer with the same name and key")
    func alternativeIssuer() throws {
        let root = try Self.pki.root("alt-root")
        let otherRoot = try Self.pki.root("alt-other-root")
        try Self.pki.root("alt-untrusted-root")
        let constrained = try Self.pki.intermediate(
            "alt-constrained", issuer: "alt-root", extensions: ["nameConstraints=critical,excluded;DNS:forbidden.example.com"])
        let subject = "/CN=An Intermediate"
        // Under the constrained CA with a forbidden name, under an unknown root, and under the other trusted root.
        let forbidden = try Self.pki.issue(
            "alt-forbidden", issuer: "alt-constrained", subject: subject,
            extensions: NamesPKI.caExtensions + ["authorityKeyIdentifier=keyid", "subjectAltName=DNS:forbidden.example.com"])
        let orphan = try Self.pki.issue(
            "alt-orphan", issuer: "alt-untrusted-root", subject: subject,
            extensions: NamesPKI.caExtensions + ["authorityKeyIdentifier=keyid"], key: "alt-forbidden")
        let good = try Self.pki.issue(
            "alt-good", issuer: "alt-other-root", subject: subject,
            extensions: NamesPKI.caExtensions + ["authorityKeyIdentifier=keyid"], key: "alt-forbidden")
        let leaf = try Self.pki.leaf(
            "alt-leaf", issuer: "alt-good", subject: "/CN=unconstrained.example.com",
            extensions: ["subjectAltName=DNS:unconstrained.example.com"])

        for bad in [forbidden, orphan] {
            let alone = try Self.evaluate([leaf, constrained, bad], anchors: [root, otherRoot], host: "unconstrained.example.com")
            #expect(alone.failure?.reason == .chainInvalid, "only the failing path was sent: \(alone.failure?.message ?? "trusted")")
            let both = try Self.evaluate(
                [leaf, constrained, bad, good], anchors: [root, otherRoot], host: "unconstrained.example.com")
            #expect(both.failure == nil, "\(both.failure?.message ?? "")")
            #expect(both.verifiedChain == [leaf, good, otherRoot])
        }
        // The other path is held to every rule: with the good issuer's root untrusted, nothing passes.
        let noPath = try Self.evaluate([leaf, forbidden, orphan, good], anchors: [root], host: "unconstrained.example.com")
        #expect(noPath.failure?.reason == .chainInvalid)
    }

    @Test(
        "A trusted root signed by its own key whose issuer names another CA needs no authority key identifier; below an anchor one is still required"
    )
    func anchorNamingAnotherIssuer() throws {
        // `alias` lends its name as the issuer: `anchor` is signed with its own key (alias has the same one).
        try Self.pki.root("anchor-alias", subject: "/CN=Another Root Name")
        let anchor = try Self.pki.issue(
            "anchor-self", issuer: "anchor-alias", subject: "/CN=Root A",
            extensions: NamesPKI.caExtensions + ["authorityKeyIdentifier=none"],
            key: "anchor-alias")
        #expect(anchor.issuer == "CN=Another Root Name")
        let intermediate = try Self.pki.intermediate("anchor-inter", issuer: "anchor-self")
        let leaf = try Self.pki.leaf(
            "anchor-leaf", issuer: "anchor-inter", subject: "/CN=a.example.com", extensions: ["subjectAltName=DNS:a.example.com"])
        let trusted = try Self.evaluate([leaf, intermediate], anchors: [anchor], host: "a.example.com")
        #expect(trusted.failure == nil, "\(trusted.failure?.message ?? "")")

        // A CA certificate without one that is not the anchor (here signed by another key) is still refused.
        let otherKey = try Self.pki.issue(
            "anchor-under-alias", issuer: "anchor-alias", subject: "/CN=Intermediate Without AKI",
            extensions: NamesPKI.caExtensions + ["authorityKeyIdentifier=none"])
        let leafBelow = try Self.pki.leaf(
            "anchor-leaf-below", issuer: "anchor-under-alias", subject: "/CN=b.example.com",
            extensions: ["subjectAltName=DNS:b.example.com"])
        let alias = try Certificate.certificates(contentsOf: Self.pki.path("anchor-alias"))[0]
        let below = try Self.evaluate([leafBelow, otherKey], anchors: [alias], host: "b.example.com")
        #expect(
            below.failure?.reason == .chainInvalid && below.failure?.message.lowercased().contains("authority key identifier") == true,
            "\(below.failure?.message ?? "trusted")")
    }

    @Test(
        "notAfter is the last valid second (RFC 5280 4.1.2.5), a fraction past it too; the next second is expired; notBefore is the first")
    func validityBounds() throws {
        let root = try Self.pki.root("bounds-root")
        let leaf = try Self.pki.leaf(
            "bounds-leaf", issuer: "bounds-root", subject: "/CN=c.example.com", extensions: ["subjectAltName=DNS:c.example.com"])
        let lastSecond = min(root.notAfter, leaf.notAfter)
        let firstSecond = max(root.notBefore, leaf.notBefore)
        for (time, trusted) in [
            (lastSecond, true), (lastSecond + 0.005, true), (lastSecond + 1, false),
            (firstSecond, true), (firstSecond - 1, false),
        ] {
            let evaluation = try Self.evaluate([leaf], anchors: [root], host: "c.example.com", at: time)
            #expect((evaluation.failure == nil) == trusted, "at \(time): \(evaluation.failure?.message ?? "trusted")")
        }
    }
}
