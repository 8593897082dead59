import Foundation
import PinpathTestSupport
import Testing

/// `pinpath audit` and `verify` with `--ca-file` naming a root that is also in the system bundle: the `auto`
/// profile finds it public (``webpki``) through the bundle's index rather than loading the bundle (issue 30,
/// the audit goal), and a private root still gets ``rfc5280``. The child's system store is a bundle file made
/// here (Debian's bundle with the test's root added, as an operator's `update-ca-certificates` would) and an
/// empty directory, through `SSL_CERT_FILE` and `SSL_CERT_DIR`; the test process's environment is not changed.
/// The server sends the issue-28 leaf without an extended key usage, which only `webpki` refuses.
@Suite("Public anchors found in the system bundle: audit and verify", .serialized)
struct PublicAnchorBundleTests {
    static let pki = NamesPKI.shared
    static let served = ProfileByAnchorTests.leafWithoutUsage
    static let publicVerdict =
        "  profile    webpki (anchor from ca_file, public: the system store vouches for it): rule \(ProfileByAnchorTests.leafWithoutUsage.rule)"
    static let privateVerdict = "  profile    rfc5280 (anchor from ca_file)\n"

    /// A system bundle in the PKI directory: `before`, Debian's bundle, the served root, `after`.
    static func systemBundle(before: String = "", after: String = "") throws -> String {
        try ProfileByAnchorTests.issued.get()
        let debian = (try? String(contentsOfFile: "/etc/ssl/certs/ca-certificates.crt", encoding: .utf8)) ?? ""
        let root = try String(contentsOfFile: pki.path(served.anchor), encoding: .utf8)
        let path = "\(pki.directory)/system-bundle-\(UUID().uuidString).pem"
        try (before + debian + root + after).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func audit(_ server: TLSServer, systemStore: String?) throws -> Shell.Result {
        try ProfileByAnchorTests.pinpath(
            [
                "audit", "localhost:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--ca-file", pki.path(served.anchor),
                "--timeout", "5",
            ], systemStore: systemStore)
    }

    static func verify(systemStore: String?) throws -> Shell.Result {
        try ProfileByAnchorTests.pinpath(
            ["verify", pki.path(served.leaf), "--host", "localhost", "--ca-file", pki.path(served.anchor)], systemStore: systemStore)
    }

    @Test("pinpath audit --ca-file: a root the system bundle also holds is public (webpki); a private one is rfc5280")
    func audit() throws {
        let server = try ProfileByAnchorTests.serve(Self.served)
        defer { server.stop() }
        let publicRoot = try Self.audit(server, systemStore: Self.systemBundle())
        #expect(publicRoot.status == 2, "\(publicRoot.stdout)\(publicRoot.stderr)")
        #expect(publicRoot.stdout.contains(Self.publicVerdict), "\(publicRoot.stdout)")
        // The machine's own system store does not hold the test's root.
        let privateRoot = try Self.audit(server, systemStore: nil)
        #expect(privateRoot.status == 0, "\(privateRoot.stdout)\(privateRoot.stderr)")
        #expect(privateRoot.stdout.contains(Self.privateVerdict), "\(privateRoot.stdout)")
    }

    @Test("pinpath verify --ca-file: a root the system bundle also holds is public (webpki); a private one is rfc5280")
    func verify() throws {
        try ProfileByAnchorTests.issued.get()
        let publicRoot = try Self.verify(systemStore: Self.systemBundle())
        #expect(publicRoot.status == 2, "\(publicRoot.stdout)\(publicRoot.stderr)")
        #expect(publicRoot.stdout.contains(Self.publicVerdict), "\(publicRoot.stdout)")
        let privateRoot = try Self.verify(systemStore: nil)
        #expect(privateRoot.status == 0, "\(privateRoot.stdout)\(privateRoot.stderr)")
        #expect(privateRoot.stdout.contains(Self.privateVerdict), "\(privateRoot.stdout)")
    }

    /// Blocks OpenSSL's loader cannot read: until the bundle was indexed, one of them anywhere in the bundle made
    /// `X509_STORE_load_file` add nothing from it, and the public root was taken for a private one.
    static let damagedBlocks = [
        "-----BEGIN CERTIFICATE-----\n!!!!not base64\n-----END CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\nMIIBkjCCATmgAwIBAgIU\n-----END CERTIFICATE-----\n",
    ]

    @Test(
        "Fail loud: a damaged block in the system bundle does not hide the public root after it (audit and verify)",
        arguments: damagedBlocks)
    func damagedBundle(_ damaged: String) throws {
        let server = try ProfileByAnchorTests.serve(Self.served)
        defer { server.stop() }
        let bundle = try Self.systemBundle(before: damaged, after: "-----BEGIN CERTIFICATE-----\nMIIB")
        let audited = try Self.audit(server, systemStore: bundle)
        #expect(audited.status == 2, "\(audited.stdout)\(audited.stderr)")
        #expect(audited.stdout.contains(Self.publicVerdict), "\(audited.stdout)")
        let verified = try Self.verify(systemStore: bundle)
        #expect(verified.status == 2, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains(Self.publicVerdict), "\(verified.stdout)")
    }
}
