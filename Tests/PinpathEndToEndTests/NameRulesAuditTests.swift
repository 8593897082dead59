import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// The name rules through `pinpath audit` as a user runs it, against `openssl s_server` serving generated
/// chains: the rejection names the rule, and the exit code is 2 (chain or host invalid).
@Suite("Profile rules: names, through pinpath audit")
struct NameRulesAuditTests {
    static let pki = NamesPKI.shared

    /// Serves `leaf` (issued by `issuer`) with its issuer and runs `pinpath audit` for `host`, trusting `root`,
    /// with `options` after.
    static func audit(leaf: String, issuer: String, root: String, host: String, _ options: [String] = []) throws -> Shell.Result {
        let server = try TLSServer(
            certificate: pki.path(leaf), key: pki.path(leaf, "key"), chain: [pki.path(issuer)], in: pki.directory)
        defer { server.stop() }
        return try Shell.run(
            [
                Shell.pinpath, "audit", "\(host):\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file",
                pki.path(root),
            ] + options)
    }

    @Test("A server with a CN-only leaf for its name: audit --profile webpki rejects it naming webpki.san_required, exit 2")
    func commonNameOnlyLeaf() throws {
        try Self.pki.root("audit-cn-root")
        try Self.pki.intermediate("audit-cn-ca", issuer: "audit-cn-root")
        try Self.pki.leaf("audit-cn-leaf", issuer: "audit-cn-ca", subject: "/CN=cnonly.example.com", extensions: [])
        let result = try Self.audit(
            leaf: "audit-cn-leaf", issuer: "audit-cn-ca", root: "audit-cn-root", host: "cnonly.example.com", ["--profile", "webpki"])
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("rule webpki.san_required at depth 0 (CN=cnonly.example.com)"), "\(result.stdout)")
        #expect(result.stdout.contains("(a Baseline Requirements rule, not in rfc5280)"), "\(result.stdout)")
    }

    @Test("A server whose wildcard reaches into its CA's excluded subtree: audit names the rule, exit 2; a clean one is trusted")
    func wildcardIntoExcludedSubtree() throws {
        try Self.pki.root("audit-nc-root")
        try Self.pki.intermediate(
            "audit-nc-ca", issuer: "audit-nc-root", extensions: ["nameConstraints=critical,excluded;DNS:admin.example.com"])
        try Self.pki.leaf(
            "audit-nc-wild", issuer: "audit-nc-ca", subject: "/CN=*.example.com", extensions: ["subjectAltName=DNS:*.example.com"])
        let attack = try Self.audit(leaf: "audit-nc-wild", issuer: "audit-nc-ca", root: "audit-nc-root", host: "www.example.com")
        #expect(attack.status == 2, "\(attack.stdout)\(attack.stderr)")
        #expect(attack.stdout.contains("rule rfc5280.name_constraints_wildcards at depth 1"), "\(attack.stdout)")

        try Self.pki.leaf(
            "audit-nc-www", issuer: "audit-nc-ca", subject: "/CN=www.example.com", extensions: ["subjectAltName=DNS:www.example.com"])
        let clean = try Self.audit(leaf: "audit-nc-www", issuer: "audit-nc-ca", root: "audit-nc-root", host: "www.example.com")
        #expect(clean.status == 0, "\(clean.stdout)\(clean.stderr)")
    }
}
