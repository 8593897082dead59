import COpenSSL
import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// Whether an anchor is public (``PublicAnchors/vouch(for:servedAlongside:in:)``), asked of the system store
/// as ``SystemAnchors`` reads it (the bundle indexed by subject, the hashed directory looked up by OpenSSL) and
/// of the store loaded whole as before (``TrustStore/init(file:directory:)``, `X509_STORE_load_file` and
/// `X509_STORE_load_path`), over real certificates in real bundle files and hashed directories (made by
/// `openssl rehash`). The rule: the new look-up never says "not public" where the loaded store says "public".
@Suite("System anchors: the public-anchor look-up without loading the bundle")
struct SystemAnchorsTests {
    static let pki = NamesPKI.shared

    /// The certificates of these tests, issued once.
    static let issued: Result<Void, any Error> = Result {
        try pki.root("sa-file-root")
        try pki.root("sa-dir-root")
        try pki.root("sa-other-root")
        try pki.root("sa-unrelated")
        try pki.intermediate("sa-file-child", issuer: "sa-file-root")
        try pki.intermediate("sa-dir-child", issuer: "sa-dir-root")
        try pki.intermediate("sa-served-ca", issuer: "sa-file-root")
        try pki.root("sa-offstore-root")
        try pki.intermediate("sa-bundled-ca", issuer: "sa-offstore-root")
        try pki.leaf("sa-served-leaf", issuer: "sa-served-ca", subject: "/CN=sa.test", extensions: ["subjectAltName=DNS:sa.test"])
        // The same subjects as the stores' roots, with keys of their own.
        _ = try pki.issue("sa-file-twin", issuer: nil, subject: "/CN=sa-file-root", extensions: NamesPKI.caExtensions)
        _ = try pki.issue("sa-dir-twin", issuer: nil, subject: "/CN=sa-dir-root", extensions: NamesPKI.caExtensions)
        // The file root as a TRUSTED CERTIFICATE block (trust settings after the certificate).
        try Shell.check([
            "openssl", "x509", "-in", pki.path("sa-file-root"), "-trustout", "-addtrust", "serverAuth", "-out",
            pki.path("sa-file-root-trusted"),
        ])
    }

    static func certificate(_ name: String) throws -> Certificate {
        try #require(try Certificate.certificates(contentsOf: pki.path(name)).first)
    }

    static func text(_ name: String) throws -> String { try String(contentsOfFile: pki.path(name), encoding: .utf8) }

    /// A hashed directory of `names` in `directory`, as `c_rehash` makes `/etc/ssl/certs`.
    static func hashedDirectory(_ names: [String], in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("certs")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for name in names { try FileManager.default.copyItem(atPath: pki.path(name), toPath: "\(path)/\(name).pem") }
        try Shell.check(["openssl", "rehash", path])
        return path
    }

    /// The system's own bundle, for volume and real-world encodings; empty where there is none.
    static var debianBundle: String {
        (try? String(contentsOfFile: TrustStore.defaultPaths(environment: { _ in nil }).file, encoding: .utf8)) ?? ""
    }

    /// What both look-ups answer for `anchor` sent with `served`: (new, loaded whole).
    static func answers(_ anchor: String, served: [String] = [], file: String, directory: String) throws -> (new: Bool, loaded: Bool) {
        let anchor = try certificate(anchor)
        let served = try served.map(certificate)
        let new = try PublicAnchors.vouch(for: anchor, servedAlongside: served, in: SystemAnchors(file: file, directory: directory))
        let loaded = try PublicAnchors.vouch(for: anchor, servedAlongside: served, in: TrustStore(file: file, directory: directory))
        return (new, loaded)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var anchor: String
        var served: [String] = []
        var isPublic: Bool
        var testDescription: String { name }
    }

    static let cases = [
        Case(name: "(a) in the bundle file only", anchor: "sa-file-root", isPublic: true),
        Case(name: "(a) an intermediate in the bundle file, its issuer nowhere", anchor: "sa-bundled-ca", isPublic: true),
        Case(name: "(b) in the hashed directory only", anchor: "sa-dir-root", isPublic: true),
        Case(name: "(c) issued by a bundle certificate", anchor: "sa-file-child", isPublic: true),
        Case(name: "(c) issued by a directory certificate", anchor: "sa-dir-child", isPublic: true),
        Case(name: "(d) issued through a served intermediate", anchor: "sa-served-leaf", served: ["sa-served-ca"], isPublic: true),
        Case(name: "(d) the same, the intermediate not sent", anchor: "sa-served-leaf", isPublic: false),
        Case(name: "(e) unrelated", anchor: "sa-unrelated", isPublic: false),
        Case(name: "(f) a bundle root's subject with another key", anchor: "sa-file-twin", isPublic: false),
        Case(name: "(f) a directory root's subject with another key", anchor: "sa-dir-twin", isPublic: false),
    ]

    @Test("The look-up answers as the loaded system store: bundle, hashed directory, issued, served, unrelated, twin", arguments: cases)
    func equivalence(_ scenario: Case) throws {
        try Self.issued.get()
        let directory = try TemporaryDirectory("system-anchors")
        let bundle = directory.file("bundle.pem")
        try (Self.debianBundle + Self.text("sa-other-root") + Self.text("sa-file-root") + Self.text("sa-bundled-ca")).write(
            toFile: bundle, atomically: true, encoding: .utf8)
        let certs = try Self.hashedDirectory(["sa-dir-root"], in: directory)
        #expect(SystemAnchors(file: bundle, directory: certs).bundleIsComplete)
        let answers = try Self.answers(scenario.anchor, served: scenario.served, file: bundle, directory: certs)
        #expect(answers.loaded == scenario.isPublic, "the loaded store's answer")
        #expect(answers.new == scenario.isPublic, "the new look-up's answer")
    }

    @Test("Every certificate of the system's bundle is indexed and found by its subject, as the loaded store finds it")
    func systemBundle() throws {
        let file = TrustStore.defaultPaths(environment: { _ in nil }).file
        let certificates = try Certificate.certificates(contentsOf: file)
        let index = CertificateBundleIndex(contentsOf: file)
        #expect(index.isComplete)
        #expect(index.count == certificates.count)
        let loaded = try TrustStore(file: file, directory: nil)
        for certificate in certificates {
            let found = try index.certificates(withSubjectOf: certificate)
            #expect(found.contains(certificate), "\(certificate.subject)")
            #expect(Set(found) == Set(try loaded.certificates(withSubjectOf: certificate)), "\(certificate.subject)")
        }
    }

    /// An odd or hostile bundle: its text around the anchor `sa-file-root`, and what each look-up answers for
    /// that anchor.
    struct Hostile: Sendable, CustomTestStringConvertible {
        var name: String
        /// Writes the bundle to the path.
        var write: @Sendable (String) throws -> Void
        var isComplete: Bool
        var loaded: Bool
        var new: Bool
        var testDescription: String { name }
    }

    static func bundle(_ parts: @escaping @Sendable () throws -> [String]) -> @Sendable (String) throws -> Void {
        { path in try parts().joined().write(toFile: path, atomically: true, encoding: .utf8) }
    }

    /// A PEM block of `der`, base64 in 64-column lines.
    static func pem(_ der: [UInt8], label: String = "CERTIFICATE") -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(base64)\n-----END \(label)-----\n"
    }

    /// The anchor's DER with its outer SEQUENCE re-encoded with an indefinite length: BER that `d2i_X509`
    /// reads and the index's walker does not follow.
    static func indefiniteLength(_ name: String) throws -> [UInt8] {
        let der = try certificate(name).derBytes
        let header = der[1] < 0x80 ? 2 : 2 + Int(der[1] & 0x7F)
        return [0x30, 0x80] + der[header...] + [0, 0]
    }

    static let hostile = [
        Hostile(
            name: "a TRUSTED CERTIFICATE block", write: bundle { [try text("sa-other-root"), try text("sa-file-root-trusted")] },
            isComplete: true, loaded: true, new: true),
        Hostile(
            name: "garbage between blocks",
            write: bundle { [try text("sa-other-root"), "garbage\n-----BEGIN garbage\n\n", try text("sa-file-root"), "trailing"] },
            isComplete: true, loaded: true, new: true),
        Hostile(
            name: "an empty file", write: bundle { [] }, isComplete: true, loaded: false, new: false),
        Hostile(
            name: "a DER certificate instead of PEM",
            write: { path in try Data(try certificate("sa-file-root").derBytes).write(to: URL(fileURLWithPath: path)) },
            isComplete: false, loaded: false, new: false),  // its NUL bytes leave it to OpenSSL, which finds no PEM
        // OpenSSL's loader drops the whole file at a block it cannot read; the index goes on after it.
        Hostile(
            name: "a bad base64 line before the anchor",
            write: bundle { ["-----BEGIN CERTIFICATE-----\n!!!!not base64\n-----END CERTIFICATE-----\n", try text("sa-file-root")] },
            isComplete: false, loaded: false, new: true),
        Hostile(
            name: "a block without its end line before the anchor",
            write: bundle { [String(try text("sa-other-root").prefix(200)) + "\n", try text("sa-file-root")] },
            isComplete: false, loaded: false, new: true),
        Hostile(
            name: "a truncated last block after the anchor",
            write: bundle { [try text("sa-file-root"), String(try text("sa-other-root").prefix(200))] },
            isComplete: false, loaded: false, new: true),
        Hostile(
            name: "a block of random bytes before the anchor",
            write: bundle { [pem((0..<600).map { _ in UInt8.random(in: 0...255) }), try text("sa-file-root")] },
            isComplete: false, loaded: false, new: true),
        Hostile(
            name: "a certificate cut short before the anchor",
            write: bundle { [pem(Array(try certificate("sa-other-root").derBytes.prefix(300))), try text("sa-file-root")] },
            isComplete: false, loaded: false, new: true),
        // The walker cannot follow it but OpenSSL reads it: the file is loaded as OpenSSL does, and found there.
        Hostile(
            name: "the anchor in BER (an indefinite length) the walker does not follow",
            write: bundle { [try text("sa-other-root"), pem(try indefiniteLength("sa-file-root"))] },
            isComplete: false, loaded: true, new: true),
        Hostile(
            name: "the anchor's block with a header line, which OpenSSL refuses",
            write: bundle {
                [
                    try text("sa-file-root").replacingOccurrences(
                        of: "-----BEGIN CERTIFICATE-----\n", with: "-----BEGIN CERTIFICATE-----\nComment: x\n\n")
                ]
            },
            isComplete: false, loaded: false, new: false),
        Hostile(
            name: "8 MiB of text lines, then the anchor",
            write: bundle { [String(repeating: "not a certificate\n", count: 8 << 20 / 18), try text("sa-file-root")] },
            isComplete: true, loaded: true, new: true),
        // OpenSSL's stdio reading stops at a line that starts with NUL; the index reads on, and leaves the file
        // to OpenSSL as well.
        Hostile(
            name: "NUL bytes between blocks, then the anchor",
            write: bundle { [try text("sa-other-root"), "\0\0\0\n", try text("sa-file-root")] },
            isComplete: false, loaded: false, new: true),
        // Over readRegularFile's limit: left to OpenSSL's loader, which reads it as before.
        Hostile(
            name: "65 MiB of text lines, then the anchor",
            write: bundle { [String(repeating: "not a certificate\n", count: 65 << 20 / 18 + 1), try text("sa-file-root")] },
            isComplete: false, loaded: true, new: true),
    ]

    @Test("A hostile or odd bundle answers as the loaded store or finds more, never less; nothing crashes or hangs", arguments: hostile)
    func hostileBundle(_ scenario: Hostile) throws {
        try Self.issued.get()
        let directory = try TemporaryDirectory("system-anchors-hostile")
        let bundle = directory.file("bundle.pem")
        try scenario.write(bundle)
        let empty = try Self.hashedDirectory([], in: directory)
        #expect(SystemAnchors(file: bundle, directory: empty).bundleIsComplete == scenario.isComplete)
        let answers = try Self.answers("sa-file-root", file: bundle, directory: empty)
        #expect(answers.loaded == scenario.loaded, "the loaded store's answer")
        #expect(answers.new == scenario.new, "the new look-up's answer")
        // The fail-loud rule, whatever the bundle: never "not public" where the loaded store says "public".
        #expect(answers.new || !answers.loaded)
    }

    @Test("The DER walk finds the subject d2i_X509 finds, or gives up, on 3,000 mutated certificates; it never crashes")
    func walkerAgreesWithOpenSSL() throws {
        try Self.issued.get()
        var generator = SystemRandomNumberGenerator()
        var (agreed, gaveUp) = (0, 0)
        for name in ["sa-file-root", "sa-served-leaf", "sa-bundled-ca"] {
            let original = try Self.certificate(name).derBytes
            for _ in 0..<1000 {
                var der = original
                // One to three bytes changed, more often in the first 200 (tags and lengths of the walk's path).
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let position = Int.random(in: 0..<(Bool.random(using: &generator) ? min(200, der.count) : der.count), using: &generator)
                    der[position] = UInt8.random(in: 0...255, using: &generator)
                }
                let walked = CertificateBundleIndex.subjectHash(ofCertificate: der)
                let decoded = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                    var cursor = buffer.baseAddress
                    return d2i_X509(nil, &cursor, buffer.count)
                }
                guard let decoded else {
                    _ = drainOpenSSLErrors()
                    continue  // OpenSSL's loader would drop the whole file: nothing to agree with
                }
                defer { X509_free(decoded) }
                var hashed: Int32 = 0
                let hash = X509_NAME_hash_ex(X509_get_subject_name(decoded), nil, nil, &hashed)
                guard let walked else {
                    gaveUp += 1  // the index is then incomplete and the file is loaded as OpenSSL does
                    continue
                }
                #expect(hashed == 1 && walked == hash, "\(name): the walk filed a certificate under another name than OpenSSL's")
                agreed += 1
            }
        }
        _ = drainOpenSSLErrors()
        print("walker: \(agreed) agreed with d2i_X509, \(gaveUp) left to OpenSSL")
        #expect(agreed > 0)
    }

    @Test("A missing bundle file or an unusable directory path contributes nothing, and the rest still answers")
    func missingParts() throws {
        try Self.issued.get()
        let directory = try TemporaryDirectory("system-anchors-missing")
        let certs = try Self.hashedDirectory(["sa-dir-root"], in: directory)
        let missing = directory.file("no-such-bundle.pem")
        #expect(SystemAnchors(file: missing, directory: certs).bundleIsComplete)
        #expect(try Self.answers("sa-dir-root", file: missing, directory: certs) == (true, true))
        #expect(try Self.answers("sa-file-root", file: missing, directory: certs) == (false, false))
        // OpenSSL refuses an empty directory path (SSL_CERT_DIR=""): the loaded store cannot be made at all,
        // and the bundle still answers.
        let bundle = directory.file("bundle.pem")
        try Self.text("sa-file-root").write(toFile: bundle, atomically: true, encoding: .utf8)
        #expect(throws: SecurityError.self) { try TrustStore(file: bundle, directory: "") }
        #expect(
            try PublicAnchors.vouch(
                for: Self.certificate("sa-file-root"), servedAlongside: [], in: SystemAnchors(file: bundle, directory: "")))
    }
}
