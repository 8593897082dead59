import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// The profile chosen by the anchor (issue 28, item 1), end to end with the issue's two certificates served by
/// `openssl s_server`: a leaf without an extended key usage (what `openssl x509 -req` makes when its extension
/// file names none) from a private CA, and a self-signed `CN=myservice.internal` with `subjectAltName=DNS:localhost`
/// trusted as its own anchor. Under the default `auto` both are accepted when the anchor comes from `--ca-file`,
/// `ca_file` or a pinned certificate (`rfc5280`), and refused when the same anchor comes from the system store,
/// or is also in it (`webpki`), or when `webpki` is forced. The system store of a child process is pointed at
/// the anchor with `SSL_CERT_FILE` (and an empty `SSL_CERT_DIR`); the test process's own environment is never
/// changed.
@Suite("Profile chosen by the anchor: the issue's two certificates", .serialized)
struct ProfileByAnchorTests {
    static let pki = NamesPKI.shared

    /// One of the issue's certificates: what the server sends, the anchor that trusts it, the host it is
    /// valid for, and the webpki rule that refuses it.
    struct Served: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        var anchor: String
        var rule: String
        var testDescription: String { name }
    }

    static let leafWithoutUsage = Served(
        name: "a leaf without EKU from a private CA", leaf: "anchor-noeku-leaf", anchor: "anchor-noeku-ca",
        rule: "webpki.leaf_eku_server_auth")
    static let selfSigned = Served(
        name: "a self-signed CN=myservice.internal, SAN localhost, its own anchor", leaf: "anchor-selfsigned",
        anchor: "anchor-selfsigned", rule: "webpki.cn_in_san")
    static let served = [leafWithoutUsage, selfSigned]

    /// Issues both certificates once (each test may be the first to run).
    static let issued: Result<Void, any Error> = Result {
        try pki.root("anchor-noeku-ca", subject: "/CN=My Private CA")
        try pki.issue(
            "anchor-noeku-leaf", issuer: "anchor-noeku-ca", subject: "/CN=localhost", extensions: ["subjectAltName=DNS:localhost"])
        // What `openssl req -x509 -subj /CN=myservice.internal -addext subjectAltName=DNS:localhost` makes.
        try pki.issue(
            "anchor-selfsigned", issuer: nil, subject: "/CN=myservice.internal",
            extensions: [
                "subjectKeyIdentifier=hash", "authorityKeyIdentifier=keyid:always", "basicConstraints=critical,CA:true",
                "subjectAltName=DNS:localhost",
            ])
        try FileManager.default.createDirectory(atPath: emptyDirectory, withIntermediateDirectories: true)
    }

    /// An empty `SSL_CERT_DIR`, so that a child's system store is exactly its `SSL_CERT_FILE`.
    static let emptyDirectory = "\(pki.directory)/empty-cert-dir"

    static func serve(_ served: Served) throws -> TLSServer {
        try issued.get()
        return try TLSServer(certificate: pki.path(served.leaf), key: pki.path(served.leaf, "key"), chain: [], in: pki.directory)
    }

    /// Runs `pinpath` with `arguments`; with `systemStore`, the child's system store is that file alone.
    static func pinpath(_ arguments: [String], systemStore: String? = nil) throws -> Shell.Result {
        let environment = systemStore.map { ["/usr/bin/env", "SSL_CERT_FILE=\($0)", "SSL_CERT_DIR=\(emptyDirectory)"] } ?? []
        return try Shell.run(environment + [Shell.pinpath] + arguments)
    }

    /// A copy of `served`'s anchor under another name: a CA file that repeats what the system store holds.
    static func copyOfAnchor(_ served: Served) throws -> String {
        let copy = "\(pki.directory)/copy-\(UUID().uuidString).pem"
        try FileManager.default.copyItem(atPath: pki.path(served.anchor), toPath: copy)
        return copy
    }

    // MARK: pinpath request

    @Test("pinpath request --ca-file: accepted (rfc5280, anchor from ca_file), -v says so; --profile webpki refuses", arguments: served)
    func requestWithCAFile(_ served: Served) throws {
        let server = try Self.serve(served)
        defer { server.stop() }
        let url = "https://localhost:\(server.port)/"
        let accepted = try Self.pinpath(["request", url, "--ca-file", Self.pki.path(served.anchor), "-v", "--timeout", "5"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.stderr.contains("profile rfc5280 (anchor from ca_file)"), "\(accepted.stderr)")
        let json = try Self.pinpath(["request", url, "--ca-file", Self.pki.path(served.anchor), "--json", "--timeout", "5"])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let tls = try #require(summary["tls"] as? [String: Any], "\(json.stdout)")
        #expect(tls["profile"] as? String == "rfc5280" && tls["profile_reason"] as? String == "anchor from ca_file")

        let forced = try Self.pinpath([
            "request", url, "--ca-file", Self.pki.path(served.anchor), "--profile", "webpki", "-v", "--timeout", "5",
        ])
        #expect(forced.status == 2, "\(forced.stderr)")
        #expect(forced.stderr.contains("under webpki (profile: webpki): rule \(served.rule)"), "\(forced.stderr)")
    }

    @Test(
        "pinpath request: refused under webpki when the system store holds the anchor, even when --ca-file names it too", arguments: served)
    func requestWithSystemAnchor(_ served: Served) throws {
        let server = try Self.serve(served)
        defer { server.stop() }
        let url = "https://localhost:\(server.port)/"
        let system = try Self.pinpath(["request", url, "-v", "--timeout", "5"], systemStore: Self.pki.path(served.anchor))
        #expect(system.status == 2, "\(system.stderr)")
        #expect(system.stderr.contains("under webpki (anchor from the system store): rule \(served.rule)"), "\(system.stderr)")
        #expect(system.stderr.contains("profile webpki (anchor from the system store)"), "\(system.stderr)")
        // A CA file that copies the system bundle names public anchors: still webpki.
        let copied = try Self.pinpath(
            ["request", url, "--ca-file", try Self.copyOfAnchor(served), "--timeout", "5"], systemStore: Self.pki.path(served.anchor))
        #expect(copied.status == 2, "\(copied.stderr)")
        #expect(
            copied.stderr.contains("under webpki (anchor from ca_file, public: the system store vouches for it): rule \(served.rule)"),
            "\(copied.stderr)")
    }

    // MARK: The library

    @Test("Session: accepted with a CA file and the reason in the evaluation; refused with a forced webpki policy", arguments: served)
    func session(_ served: Served) async throws {
        let server = try Self.serve(served)
        defer { server.stop() }
        var options = RequestOptions()
        options.timeout = TestTime.scaled(.seconds(5))
        options.freshConnection = true
        let request = SessionRequest(method: .get, url: URL(string: "https://localhost:\(server.port)/")!)
        let session = try Session(Session.Configuration(trustStore: TrustStore(caFile: Self.pki.path(served.anchor))))
        let response = try await session.send(request, options: options)
        #expect(response.statusCode == 200)
        let applied = try #require(response.tls?.evaluation?.appliedProfile)
        #expect(applied.profile == .rfc5280 && applied.basis == .namedAnchor && applied.anchorOrigin == .caFile)
        #expect(applied.description == "rfc5280 (anchor from ca_file)")

        options.securityPolicy = try SecurityPolicy(mode: .none, profile: .webpki)
        do throws(HTTPError) {
            let refused = try await session.send(request, options: options)
            Issue.record("forced webpki: status \(refused.statusCode)")
        } catch {
            #expect(error.code == .tlsInvalid, "\(error.message)")
            #expect(error.evaluation?.failure?.violation?.rule == served.rule, "\(error.message)")
            #expect(error.evaluation?.appliedProfile?.description == "webpki (profile: webpki)")
        }
    }

    @Test("SecurityPolicy.evaluate: a pinned self-signed certificate is its own rfc5280 anchor; profile: .webpki still refuses")
    func pinnedCertificate() throws {
        try Self.issued.get()
        let certificate = try #require(try Certificate.certificates(contentsOf: Self.pki.path(Self.selfSigned.leaf)).first)
        let policy = try SecurityPolicy.oneOff(pinnedCertificates: [certificate])
        let store = try TrustStore(certificates: [])
        let accepted = try policy.evaluate(servedChain: [certificate], host: "localhost", trustStore: store)
        #expect(accepted.verdict == .trusted, "\(accepted.failure?.message ?? "")")
        #expect(accepted.appliedProfile?.description == "rfc5280 (anchor from a pinned certificate)")
        // The external harness's call shape forces the profile.
        let forced = try policy.evaluate(servedChain: [certificate], host: "localhost", trustStore: store, profile: .webpki)
        #expect(forced.failure?.violation?.rule == Self.selfSigned.rule, "\(forced.failure?.message ?? "trusted")")
    }

    @Test("A path with no anchor (pins with allow_invalid_certificates) is held to webpki")
    func noAnchor() throws {
        try Self.issued.get()
        let leaf = try #require(try Certificate.certificates(contentsOf: Self.pki.path(Self.leafWithoutUsage.leaf)).first)
        let policy = try SecurityPolicy(
            mode: .publicKey, pins: [leaf.spkiPin], allowInvalidCertificates: true, requiresBackupPin: false)
        let evaluation = try policy.evaluate(servedChain: [leaf], host: "localhost", trustStore: TrustStore(certificates: []))
        #expect(evaluation.failure?.violation?.rule == Self.leafWithoutUsage.rule, "\(evaluation.failure?.message ?? "trusted")")
        #expect(evaluation.appliedProfile?.basis == .noAnchor)
        #expect(evaluation.appliedProfile?.description == "webpki (no anchor)")
        // Forcing rfc5280 is the operator's way to accept it.
        let lenient = try policy.evaluate(
            servedChain: [leaf], host: "localhost", trustStore: TrustStore(certificates: []), profile: .rfc5280)
        #expect(lenient.verdict == .trusted, "\(lenient.failure?.message ?? "")")
    }

    // MARK: pinpath audit (certificate mode)

    @Test("pinpath audit --mode certificate: a pinned self-signed certificate is accepted; once the system store holds it, refused")
    func auditPinned() throws {
        let served = Self.selfSigned
        let server = try Self.serve(served)
        defer { server.stop() }
        let arguments = [
            "audit", "localhost:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--mode", "certificate", "--pin-file",
            Self.pki.path(served.anchor),
        ]
        let accepted = try Self.pinpath(arguments)
        #expect(accepted.status == 0, "\(accepted.stdout)\(accepted.stderr)")
        #expect(accepted.stdout.contains("  profile    rfc5280 (anchor from a pinned certificate)\n"), "\(accepted.stdout)")
        let publicRoot = try Self.pinpath(arguments, systemStore: Self.pki.path(served.anchor))
        #expect(publicRoot.status == 2, "\(publicRoot.stdout)\(publicRoot.stderr)")
        #expect(
            publicRoot.stdout.contains(
                "  profile    webpki (anchor from a pinned certificate, public: the system store vouches for it): rule \(served.rule)"),
            "\(publicRoot.stdout)")
    }

    @Test("pinpath audit: a pinned leaf is public when the intermediate the server sends leads to the system store")
    func auditPinnedLeafOfPublicCA() throws {
        try Self.issued.get()
        try Self.pki.root("anchor-public-root")
        try Self.pki.intermediate("anchor-public-ca", issuer: "anchor-public-root")
        try Self.pki.issue(
            "anchor-public-leaf", issuer: "anchor-public-ca", subject: "/CN=localhost", extensions: ["subjectAltName=DNS:localhost"])
        let server = try TLSServer(
            certificate: Self.pki.path("anchor-public-leaf"), key: Self.pki.path("anchor-public-leaf", "key"),
            chain: [Self.pki.path("anchor-public-ca")], in: Self.pki.directory)
        defer { server.stop() }
        let arguments = [
            "audit", "localhost:\(server.port)", "--connect", "127.0.0.1:\(server.port)", "--mode", "certificate", "--pin-file",
            Self.pki.path("anchor-public-leaf"),
        ]
        let privateRoot = try Self.pinpath(arguments)
        #expect(privateRoot.status == 0, "\(privateRoot.stdout)\(privateRoot.stderr)")
        #expect(privateRoot.stdout.contains("  profile    rfc5280 (anchor from a pinned certificate)\n"), "\(privateRoot.stdout)")
        // The pinned leaf is the anchor; the intermediate sent with it is signed by a root of the system store.
        let publicRoot = try Self.pinpath(arguments, systemStore: Self.pki.path("anchor-public-root"))
        #expect(publicRoot.status == 2, "\(publicRoot.stdout)\(publicRoot.stderr)")
        #expect(
            publicRoot.stdout.contains(
                "  profile    webpki (anchor from a pinned certificate, public: the system store vouches for it): rule "
                    + Self.leafWithoutUsage.rule),
            "\(publicRoot.stdout)")
    }

    // MARK: pinpath run

    /// Runs `pinpath run --once` over one endpoint for `served`'s server under `policy` (a flow mapping, or
    /// `nil` for none) and returns the exit status and the `probe.completed` event.
    static func runOnce(
        _ served: Served, port: UInt16, policy: String?, systemStore: String? = nil
    ) throws -> (status: Int32, probe: [String: Any]?, output: String) {
        let configuration = "\(pki.directory)/agent-\(UUID().uuidString).yaml"
        let policies = policy.map { "policies:\n  anchored: \($0)\n" } ?? ""
        let reference = policy == nil ? "" : ", policy: anchored"
        try """
        events: { output: stdout, probes: all }
        \(policies)endpoints:
          - { name: anchored, url: "https://localhost:\(port)/"\(reference), timeout: \(TestTime.yamlSeconds(5)) }

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let result = try pinpath(["run", "--once", "--config", configuration], systemStore: systemStore)
        let probe = result.stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "probe.completed" }
        return (result.status, probe, result.stdout + result.stderr)
    }

    @Test("pinpath run --once: ca_file accepts (rfc5280), profile: webpki refuses, the system store's anchor refuses", arguments: served)
    func agent(_ served: Served) throws {
        let server = try Self.serve(served)
        defer { server.stop() }
        let anchor = Self.pki.path(served.anchor)
        let accepted = try Self.runOnce(served, port: server.port, policy: "{ mode: none, ca_file: \(anchor) }")
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.probe?["outcome"] as? String == "success", "\(accepted.output)")
        #expect(accepted.probe?["profile"] as? String == "rfc5280 (anchor from ca_file)", "\(accepted.output)")

        let forced = try Self.runOnce(served, port: server.port, policy: "{ mode: none, ca_file: \(anchor), profile: webpki }")
        #expect(forced.status == 1, "\(forced.output)")
        #expect(forced.probe?["error_category"] as? String == "tls_invalid", "\(forced.output)")
        #expect(forced.probe?["profile"] as? String == "webpki (profile: webpki)", "\(forced.output)")
        #expect((forced.probe?["message"] as? String)?.contains("rule \(served.rule)") == true, "\(forced.output)")

        let system = try Self.runOnce(served, port: server.port, policy: nil, systemStore: anchor)
        #expect(system.status == 1, "\(system.output)")
        #expect(system.probe?["error_category"] as? String == "tls_invalid", "\(system.output)")
        #expect(system.probe?["profile"] as? String == "webpki (anchor from the system store)", "\(system.output)")
    }

    @Test("pinpath run --once: a pinned self-signed certificate (mode certificate) is accepted; a public one is not")
    func agentPinned() throws {
        let served = Self.selfSigned
        let server = try Self.serve(served)
        defer { server.stop() }
        let policy = "{ mode: certificate, certificates: [\(Self.pki.path(served.anchor))] }"
        let accepted = try Self.runOnce(served, port: server.port, policy: policy)
        #expect(accepted.status == 0, "\(accepted.output)")
        #expect(accepted.probe?["profile"] as? String == "rfc5280 (anchor from a pinned certificate)", "\(accepted.output)")
        let publicRoot = try Self.runOnce(served, port: server.port, policy: policy, systemStore: Self.pki.path(served.anchor))
        #expect(publicRoot.status == 1, "\(publicRoot.output)")
        #expect(
            publicRoot.probe?["profile"] as? String
                == "webpki (anchor from a pinned certificate, public: the system store vouches for it)", "\(publicRoot.output)")
    }
}
