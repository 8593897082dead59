import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

@Suite("Security policy evaluation")
struct PolicyEvaluationTests {
    /// One row: a policy, a served chain (PKI names, leaf first), a host, and the verdict expected.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var mode: PinningMode = .none
        var served: [String]
        var host = "valid.test"
        /// Certificates whose SPKI is pinned (public_key) or which are pinned (certificate).
        var pinned: [String] = []
        var allowInvalid = false
        var validatesDomainName = true
        /// `nil`: trusted; otherwise the failure reason and, for chain and host failures, OpenSSL's code.
        var reason: String?
        var verifyError: Int32?
        var profile = VerificationProfile.webpki
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        // Mode none: the chain and the name.
        Case(name: "none: valid chain and host", served: ["valid", "inter"]),
        Case(name: "none: second SAN", served: ["valid", "inter"], host: "www.valid.test"),
        Case(name: "none: host case and trailing dot ignored", served: ["valid", "inter"], host: "VALID.Test."),
        Case(name: "none: wrong host", served: ["wronghost", "inter"], reason: "host_mismatch", verifyError: 62),
        Case(
            name: "none: valid certificate, other host", served: ["valid", "inter"], host: "other.test", reason: "host_mismatch",
            verifyError: 62),
        Case(
            name: "none: other host accepted without domain validation", served: ["valid", "inter"], host: "other.test",
            validatesDomainName: false),
        Case(name: "none: expired", served: ["expired", "inter"], reason: "chain_invalid", verifyError: 10),
        Case(name: "none: not yet valid", served: ["notyet", "inter"], reason: "chain_invalid", verifyError: 9),
        Case(name: "none: self-signed", served: ["selfsigned"], reason: "chain_invalid", verifyError: 18),
        Case(name: "none: untrusted root", served: ["untrusted", "rogueroot"], reason: "chain_invalid", verifyError: 19),
        Case(name: "none: incomplete chain", served: ["valid"], reason: "chain_invalid", verifyError: 20),
        Case(name: "none: SHA-1-signed intermediate", served: ["sha1leaf", "sha1inter"], reason: "chain_invalid", verifyError: 68),
        Case(name: "none: RSA-1024 leaf", served: ["rsa1024", "inter"], reason: "chain_invalid", verifyError: 66),
        Case(
            name: "none: CN-only certificate, webpki (the CN is never the host: webpki.san_required)", served: ["cnonly", "inter"],
            host: "cnonly.test", reason: "chain_invalid"),
        Case(
            name: "none: CN-only certificate, rfc5280 (OpenSSL's subject fallback)", served: ["cnonly", "inter"], host: "cnonly.test",
            profile: .rfc5280),
        Case(name: "none: IPv4 SAN", served: ["ip", "inter"], host: "127.0.0.1"),
        Case(name: "none: IPv6 SAN", served: ["ip", "inter"], host: "[::1]"),
        Case(name: "none: other IP", served: ["ip", "inter"], host: "127.0.0.2", reason: "host_mismatch", verifyError: 64),
        Case(name: "none: IP certificate, name", served: ["ip", "inter"], host: "localhost", reason: "host_mismatch", verifyError: 62),
        Case(name: "none: wildcard, one label", served: ["wildcard", "inter"], host: "a.wild.test"),
        Case(
            name: "none: wildcard, the domain itself", served: ["wildcard", "inter"], host: "wild.test", reason: "host_mismatch",
            verifyError: 62),
        Case(
            name: "none: wildcard, two labels", served: ["wildcard", "inter"], host: "a.b.wild.test", reason: "host_mismatch",
            verifyError: 62),
        Case(
            name: "none: no partial wildcards", served: ["partial", "inter"], host: "www.part.test", reason: "host_mismatch",
            verifyError: 62),
        Case(
            name: "none: allow invalid without domain validation accepts self-signed", served: ["selfsigned"], allowInvalid: true,
            validatesDomainName: false),
        Case(
            name: "none: allow invalid without domain validation accepts expired, any host", served: ["expired", "inter"], host: "x.test",
            allowInvalid: true, validatesDomainName: false),

        // Public-key pinning: the verified chain must hold a pinned key.
        Case(name: "public_key: pinned leaf", mode: .publicKey, served: ["valid", "inter"], pinned: ["valid"]),
        Case(name: "public_key: pinned intermediate", mode: .publicKey, served: ["valid", "inter"], pinned: ["inter"]),
        Case(
            name: "public_key: pinned root, which the server did not send", mode: .publicKey, served: ["valid", "inter"], pinned: ["root"]),
        Case(
            name: "public_key: unrelated pins", mode: .publicKey, served: ["valid", "inter"], pinned: ["otherroot", "p256"],
            reason: "pin_mismatch"),
        Case(
            name: "public_key: pinned but expired", mode: .publicKey, served: ["expired", "inter"], pinned: ["expired"],
            reason: "chain_invalid", verifyError: 10),
        Case(
            name: "public_key: pinned but wrong host", mode: .publicKey, served: ["wronghost", "inter"], pinned: ["inter"],
            reason: "host_mismatch", verifyError: 62),
        Case(
            name: "public_key: pinned self-signed is still invalid", mode: .publicKey, served: ["selfsigned"], pinned: ["selfsigned"],
            reason: "chain_invalid", verifyError: 18),
        Case(
            name: "public_key: allow invalid, pinned self-signed", mode: .publicKey, served: ["selfsigned"], pinned: ["selfsigned"],
            allowInvalid: true),
        Case(
            name: "public_key: allow invalid, pinned expired chain", mode: .publicKey, served: ["expired", "inter"], pinned: ["inter"],
            allowInvalid: true),
        Case(
            name: "public_key: allow invalid still checks the host", mode: .publicKey, served: ["selfsigned"], host: "other.test",
            pinned: ["selfsigned"], allowInvalid: true, reason: "host_mismatch", verifyError: 62),
        Case(
            name: "public_key: allow invalid still checks pins", mode: .publicKey, served: ["selfsigned"], pinned: ["root"],
            allowInvalid: true, reason: "pin_mismatch"),
        // OkHttp CVE-2016-2402: a valid chain for the name from another CA, with pinned certificates appended.
        Case(
            name: "public_key attack: rogue leaf + appended pinned leaf", mode: .publicKey, served: ["rogue", "otherinter", "valid"],
            pinned: ["valid"], reason: "pin_mismatch"),
        Case(
            name: "public_key attack: unrelated pinned intermediate appended", mode: .publicKey, served: ["rogue", "otherinter", "inter"],
            pinned: ["inter"], reason: "pin_mismatch"),
        Case(
            name: "public_key attack: pinned root appended", mode: .publicKey, served: ["rogue", "otherinter", "root"], pinned: ["root"],
            reason: "pin_mismatch"),

        // Certificate pinning: the pinned certificates are the only anchors.
        Case(name: "certificate: pinned leaf", mode: .certificate, served: ["valid", "inter"], pinned: ["valid"]),
        Case(name: "certificate: pinned intermediate", mode: .certificate, served: ["valid", "inter"], pinned: ["inter"]),
        Case(name: "certificate: pinned root", mode: .certificate, served: ["valid", "inter"], pinned: ["root"]),
        Case(name: "certificate: pinned self-signed leaf", mode: .certificate, served: ["selfsigned"], pinned: ["selfsigned"]),
        Case(
            name: "certificate: leaf from an untrusted root, root pinned", mode: .certificate, served: ["untrusted"],
            pinned: ["rogueroot"]),
        Case(
            name: "certificate: unrelated pinned certificate", mode: .certificate, served: ["valid", "inter"], pinned: ["otherroot"],
            reason: "pin_mismatch"),
        Case(
            name: "certificate: pinned, expired", mode: .certificate, served: ["expired", "inter"], pinned: ["root"],
            reason: "chain_invalid", verifyError: 10),
        Case(
            name: "certificate: pinned, wrong host", mode: .certificate, served: ["wronghost", "inter"], pinned: ["inter"],
            reason: "host_mismatch", verifyError: 62),
        Case(
            name: "certificate: pinned, other host without domain validation", mode: .certificate, served: ["wronghost", "inter"],
            pinned: ["inter"], validatesDomainName: false),
        Case(
            name: "certificate: allow invalid does not skip validation against the pinned anchors", mode: .certificate,
            served: ["expired", "inter"], pinned: ["root"], allowInvalid: true, reason: "chain_invalid", verifyError: 10),
        Case(
            name: "certificate attack: rogue leaf + appended pinned intermediate", mode: .certificate,
            served: ["rogue", "otherinter", "inter"], pinned: ["inter"], reason: "pin_mismatch"),
        Case(
            name: "certificate attack: rogue leaf + appended pinned leaf", mode: .certificate, served: ["rogue", "otherinter", "valid"],
            pinned: ["valid"], reason: "pin_mismatch"),
    ]

    static func policy(for row: Case, enforce: Bool = true, expires: Date? = nil) throws -> SecurityPolicy {
        let pki = TestPKI.shared
        let pinned = try pki.chain(row.pinned)
        return try SecurityPolicy(
            mode: row.mode, pins: row.mode == .publicKey ? pinned.map(\.spkiPin) : [],
            pinnedCertificates: row.mode == .certificate ? pinned : [], allowInvalidCertificates: row.allowInvalid,
            validatesDomainName: row.validatesDomainName, enforce: enforce, expires: expires, requiresBackupPin: false,
            profile: ProfileSelection(row.profile))
    }

    @Test("AFSecurityPolicy's rules, OkHttp's attacks", arguments: cases)
    func evaluate(_ row: Case) throws {
        let pki = TestPKI.shared
        let evaluation = try Self.policy(for: row).evaluate(
            servedChain: try pki.chain(row.served), host: row.host, trustStore: try pki.trustStore())
        #expect(evaluation.failure?.reason.description == row.reason, "\(evaluation.failure?.message ?? "trusted")")
        #expect(evaluation.failure?.verifyError == row.verifyError)
        #expect(evaluation.allowsConnection == (row.reason == nil))
        #expect(evaluation.servedChain.map(\.subject) == (try pki.chain(row.served)).map(\.subject))
        if row.reason == nil {
            #expect(!evaluation.verifiedChain.isEmpty)
        }
    }

    @Test("Pins are seen only in the chain OpenSSL verified, by depth, and the message lists them")
    func seenPins() throws {
        let pki = TestPKI.shared
        let row = try #require(Self.cases.first { $0.name.hasPrefix("public_key attack: unrelated pinned intermediate") })
        let evaluation = try Self.policy(for: row).evaluate(
            servedChain: try pki.chain(row.served), host: row.host, trustStore: try pki.trustStore())
        let failure = try #require(evaluation.failure)
        #expect(evaluation.verifiedChain.map(\.subject) == ["CN=valid.test", "CN=Other Trusted Intermediate", "CN=Other Trusted Root"])
        #expect(failure.seenPins == (try pki.chain(["rogue", "otherinter", "otherroot"])).map(\.spkiPin))
        #expect(failure.expectedPins == [try pki.certificate("inter").spkiPin])
        #expect(!failure.seenPins.contains(try pki.certificate("inter").spkiPin))
        let interPin = try pki.certificate("inter").spkiPin
        #expect(failure.message.contains("    \(try pki.certificate("rogue").spkiPin): CN=valid.test"))
        #expect(failure.message.hasSuffix("Pinned certificates for valid.test:\n    \(interPin)"))
    }

    @Test("A verified chain ends at the root from the store")
    func verifiedChainIncludesRoot() throws {
        let pki = TestPKI.shared
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["valid", "inter"]), host: "valid.test", trustStore: try pki.trustStore())
        #expect(evaluation.verdict == .trusted)
        #expect(evaluation.verifiedChain == (try pki.chain(["valid", "inter", "root"])))
    }

    @Test("Report-only: a pin failure is reported and the connection proceeds; chain failures still block")
    func reportOnly() throws {
        let pki = TestPKI.shared
        for mode in [PinningMode.publicKey, .certificate] {
            let unrelated = Case(name: "", mode: mode, served: ["valid", "inter"], pinned: ["otherroot"])
            let evaluation = try Self.policy(for: unrelated, enforce: false).evaluate(
                servedChain: try pki.chain(unrelated.served), host: "valid.test", trustStore: try pki.trustStore())
            #expect(evaluation.failure?.reason == .pinMismatch, "\(mode)")
            #expect(evaluation.allowsConnection, "\(mode)")
            #expect(evaluation.report.validationResult == 1 && !evaluation.report.enforcePinning, "\(mode)")

            var expired = unrelated
            expired.served = ["expired", "inter"]
            let blocked = try Self.policy(for: expired, enforce: false).evaluate(
                servedChain: try pki.chain(expired.served), host: "valid.test", trustStore: try pki.trustStore())
            #expect(!blocked.allowsConnection, "\(mode)")
            #expect(blocked.failure?.verifyError == 10, "\(mode)")
        }
    }

    @Test("Expired pins are not applied, and that is reported; the chain is still checked")
    func expiredPins() throws {
        let pki = TestPKI.shared
        let past = Date(timeIntervalSince1970: 1_600_000_000)
        for mode in [PinningMode.publicKey, .certificate] {
            let row = Case(name: "", mode: mode, served: ["valid", "inter"], pinned: ["otherroot"])
            let evaluation = try Self.policy(for: row, expires: past).evaluate(
                servedChain: try pki.chain(row.served), host: "valid.test", trustStore: try pki.trustStore())
            #expect(evaluation.failure?.reason == .pinsExpired, "\(mode)")
            #expect(evaluation.allowsConnection, "\(mode)")
            #expect(evaluation.report.validationResult == 0)

            let stillPinned = try Self.policy(for: row, expires: Date().addingTimeInterval(86_400)).evaluate(
                servedChain: try pki.chain(row.served), host: "valid.test", trustStore: try pki.trustStore())
            #expect(stillPinned.failure?.reason == .pinMismatch && !stillPinned.allowsConnection, "\(mode)")

            var bad = row
            bad.served = ["wronghost", "inter"]
            let badChain = try Self.policy(for: bad, expires: past).evaluate(
                servedChain: try pki.chain(bad.served), host: "valid.test", trustStore: try pki.trustStore())
            #expect(badChain.failure?.reason == .hostMismatch && !badChain.allowsConnection, "\(mode)")
        }
    }

    @Test("A fixed verification time audits old chains")
    func verificationTime() throws {
        let pki = TestPKI.shared
        let policy = try SecurityPolicy(mode: .none)
        let chain = try pki.chain(["expired", "inter"])
        let mid2020 = Date(timeIntervalSince1970: 1_590_969_600)
        #expect(
            try policy.evaluate(servedChain: chain, host: "valid.test", trustStore: try pki.trustStore(), verificationTime: mid2020).verdict
                == .trusted)
        let notYet = try policy.evaluate(
            servedChain: try pki.chain(["notyet", "inter"]), host: "valid.test", trustStore: try pki.trustStore(),
            verificationTime: Date(timeIntervalSince1970: 2_340_000_000))
        #expect(notYet.verdict == .trusted)
    }

    @Test("An empty served chain is rejected, not a crash")
    func emptyChain() throws {
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: [], host: "valid.test", trustStore: try TestPKI.shared.trustStore())
        #expect(evaluation.failure?.reason == .chainInvalid && !evaluation.allowsConnection)
    }

    @Test("A CA file that cannot be used is an error naming it")
    func badCAFile() throws {
        let pki = TestPKI.shared
        for (path, problem) in [(pki.file("no-such-ca.pem"), "cannot open"), (pki.path("p256", "key"), "no certificate found")] {
            #expect {
                try TrustStore(caFile: path)
            } throws: { error in
                let error = error as? SecurityError
                return error?.message.hasPrefix(path + ":") == true && error?.message.contains(problem) == true
            }
        }
        #expect(throws: SecurityError.self) { try Certificate(derBytes: [0x30, 0x03, 0x02, 0x01, 0x01]) }
        #expect(try Certificate(derBytes: pki.certificate("valid").derBytes) == pki.certificate("valid"))
    }

    @Test("The system store honours SSL_CERT_FILE and SSL_CERT_DIR, and falls back to OpenSSL's defaults")
    func systemStorePaths() throws {
        let pki = TestPKI.shared
        let set = TrustStore.defaultPaths { ["SSL_CERT_FILE": pki.path("store"), "SSL_CERT_DIR": "/nonexistent"][$0] }
        #expect(set.file == pki.path("store") && set.directory == "/nonexistent")
        let unset = TrustStore.defaultPaths { _ in nil }
        #expect(unset.file.hasSuffix("cert.pem") && unset.directory.hasSuffix("certs"))

        let store = try TrustStore(file: set.file, directory: set.directory)
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["valid", "inter"]), host: "valid.test", trustStore: store)
        #expect(evaluation.verdict == .trusted)
        // The real system store does not know the test root.
        let system = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["valid", "inter"]), host: "valid.test", trustStore: try TrustStore.system())
        #expect(system.failure?.verifyError == 20)
    }

    @Test("The report carries RFC 7469's and TrustKit's fields")
    func report() throws {
        let pki = TestPKI.shared
        let pins = try pki.chain(["otherroot", "p256"]).map(\.spkiPin)
        let set = HostPolicySet([
            HostPolicy(
                patterns: [try HostPattern(parsing: "**.valid.test")],
                policy: try SecurityPolicy(mode: .publicKey, pins: pins, expires: Date(timeIntervalSince1970: 2_000_000_000)))
        ])
        let policy = try #require(set.resolution(for: "www.valid.test")?.policy)
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let evaluation = try policy.evaluate(
            servedChain: try pki.chain(["valid", "inter"]), host: "www.valid.test", port: 8443, trustStore: try pki.trustStore(), now: now)
        let fields = Dictionary(uniqueKeysWithValues: evaluation.report.fields.map { ($0.name, $0.value) })
        #expect(
            evaluation.report.fields.map(\.name) == [
                "date-time", "hostname", "port", "noted-hostname", "include-subdomains", "effective-expiration-date",
                "served-certificate-chain", "validated-certificate-chain", "known-pins", "enforce-pinning", "validation-result",
            ])
        #expect(fields["date-time"] == .string("2023-11-14T22:13:20Z"))
        #expect(fields["hostname"] == .string("www.valid.test"))
        #expect(fields["port"] == .integer(8443))
        #expect(fields["noted-hostname"] == .string("**.valid.test"))
        #expect(fields["include-subdomains"] == .boolean(true))
        #expect(fields["effective-expiration-date"] == .string("2033-05-18T03:33:20Z"))
        let served = try pki.chain(["valid", "inter"]).map(\.pem)
        #expect(fields["served-certificate-chain"] == .strings(served))
        #expect(fields["validated-certificate-chain"] == .strings(served + [try pki.certificate("root").pem]))
        #expect(fields["known-pins"] == .strings(pins.sorted { $0.base64 < $1.base64 }.map(\.hpkp)))
        #expect(fields["enforce-pinning"] == .boolean(true))
        #expect(fields["validation-result"] == .integer(1))
        let pemFile = try String(contentsOfFile: pki.path("valid"), encoding: .utf8)
        #expect(served[0] == pemFile)
    }
}
