import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// x509-limbo's server cases (https://x509-limbo.com, C2SP/x509-limbo), run as an external harness would: the
/// public `SecurityPolicy.evaluate(servedChain:host:port:trustStore:verificationTime:now:profile:maximumDepth:crls:)`
/// and `TrustStore(certificates:)` only (no `@testable`), then `pinpath verify --profile rfc5280` for the cases
/// `webpki` gets wrong. limbo's suite is not committed (it is generated, and not ours): point
/// `PINPATH_LIMBO_JSON` at a `limbo.json`; without it these tests are skipped and say so.
///
/// The selection is every testcase with `validation_kind: SERVER` that names the peer it expects
/// (`expected_peer_name`: a server is always reached by a name or address), leaving out the thousands limbo
/// imports from Netflix's BetterTLS (`bettertls::`), as limbo's own tooling does by default: 197 cases at
/// limbo's commit 8a2e6f4 (`rfc5280::nc::permitted-dn-match` names no peer).
@Suite(
    "x509-limbo server cases",
    .enabled(if: LimboSuite.path != nil, "PINPATH_LIMBO_JSON is not set: no x509-limbo suite (limbo.json) to run"))
struct LimboSuiteTests {
    /// The cases `webpki` refuses and limbo expects to pass: each breaks a Baseline Requirements rule that
    /// RFC 5280 does not have. `rfc5280` accepts them (``rfc5280ThroughVerify()``).
    static let webpkiProfileChoices: [String: String] = [
        "rfc5280::ca-as-leaf": "BR 7.1.2.7.8: a subscriber certificate is not a CA (webpki.leaf_not_ca)",
        "rfc5280::eku::ee-without-eku": "BR 7.1.2.7.10: a subscriber certificate names serverAuth (webpki.leaf_eku_server_auth)",
        "rfc5280::nc::permitted-dns-match-noncritical":
            "BR 7.1.2.10.8: name constraints are critical (webpki.name_constraints_critical)",
        // The leaf is a CA certificate (cA: TRUE, keyCertSign), as in webpki::ca-as-leaf, which limbo expects
        // refused; pyca/cryptography's limbo harness skips both for that reason.
        "pathlen::validation-ignores-pathlen-in-leaf": "BR 7.1.2.7.8: a subscriber certificate is not a CA (webpki.leaf_not_ca)",
    ]

    /// The profile choices limbo does not mark with `conflicts_with`.
    static let unmarkedByLimbo: Set<String> = ["pathlen::validation-ignores-pathlen-in-leaf"]

    @Test("Through SecurityPolicy.evaluate with profile webpki: every case as limbo expects, but the profile choices")
    func webpki() throws {
        let suite = try LimboSuite.load()
        var passed = 0
        var wrong: Set<String> = []
        for testCase in suite.serverCases {
            let outcome = testCase.evaluate(profile: .webpki)
            let right = outcome.accepted == testCase.expectsSuccess
            print("limbo webpki \(right ? "PASS" : "FAIL") \(testCase.id): \(outcome.summary)")
            if right { passed += 1 } else { wrong.insert(testCase.id) }
        }
        print("limbo webpki: \(passed) of \(suite.serverCases.count) server cases as limbo expects")
        for id in wrong.sorted() {
            #expect(Self.webpkiProfileChoices[id] != nil, "\(id): not a documented profile choice")
            let marked = suite.serverCases.first { $0.id == id }?.conflictsWith.isEmpty == false
            #expect(marked != Self.unmarkedByLimbo.contains(id), "\(id): limbo's conflicts_with is not as documented")
        }
        // The list stays true: a choice webpki no longer makes is taken off it.
        for id in Self.webpkiProfileChoices.keys.sorted() where suite.serverCases.contains(where: { $0.id == id }) {
            #expect(wrong.contains(id), "\(id): listed as a profile choice, but webpki gets it right")
        }
    }

    @Test("Through SecurityPolicy.evaluate with profile rfc5280: every case outside limbo's webpki namespace as limbo expects")
    func rfc5280() throws {
        let suite = try LimboSuite.load()
        // limbo's webpki:: cases test the Baseline Requirements, which rfc5280 leaves out by design.
        let cases = suite.serverCases.filter { !$0.id.hasPrefix("webpki::") }
        var passed = 0
        for testCase in cases {
            let outcome = testCase.evaluate(profile: .rfc5280)
            let right = outcome.accepted == testCase.expectsSuccess
            print("limbo rfc5280 \(right ? "PASS" : "FAIL") \(testCase.id): \(outcome.summary)")
            #expect(right, "\(testCase.id): \(outcome.summary)")
            if right { passed += 1 }
        }
        print("limbo rfc5280: \(passed) of \(cases.count) server cases outside webpki:: as limbo expects")
    }

    @Test("The cases webpki gets wrong (its profile choices) pass under pinpath verify --profile rfc5280")
    func rfc5280ThroughVerify() throws {
        let suite = try LimboSuite.load()
        let wrongUnderWebPKI = suite.serverCases.filter { $0.evaluate(profile: .webpki).accepted != $0.expectsSuccess }
        let directory = GeneratedDirectory.make("pinpath-limbo", what: "x509-limbo case files", script: "true")
        for testCase in wrongUnderWebPKI {
            let result = try Shell.run(
                [Shell.pinpath, "verify", "--profile", "rfc5280"] + testCase.verifyArguments(in: directory))
            let accepted = result.status == 0
            print("limbo rfc5280 (pinpath verify) \(accepted == testCase.expectsSuccess ? "PASS" : "FAIL") \(testCase.id)")
            #expect(accepted == testCase.expectsSuccess, "\(testCase.id): exit \(result.status)\n\(result.stdout)\(result.stderr)")
        }
    }
}

/// limbo.json, the fields of it the harness reads (limbo-schema.json names them all).
struct LimboSuite: Decodable {
    var testcases: [LimboCase]

    static let path = ProcessInfo.processInfo.environment["PINPATH_LIMBO_JSON"].flatMap { $0.isEmpty ? nil : $0 }

    static func load() throws -> LimboSuite {
        let path = try #require(path)
        return try JSONDecoder().decode(LimboSuite.self, from: try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Server validation cases that name the peer, BetterTLS's left out (see ``LimboSuiteTests``).
    var serverCases: [LimboCase] {
        testcases.filter { $0.validationKind == "SERVER" && $0.expectedPeerName != nil && !$0.id.hasPrefix("bettertls::") }
    }
}

struct LimboCase: Decodable {
    struct PeerName: Decodable {
        var kind: String
        var value: String
    }

    var id: String
    var conflictsWith: [String]
    var validationKind: String
    var trustedCerts: [String]
    var untrustedIntermediates: [String]
    var peerCertificate: String
    var validationTime: String?
    var expectedResult: String
    var expectedPeerName: PeerName?
    var maxChainDepth: Int?
    var crls: [String]

    enum CodingKeys: String, CodingKey {
        case id, crls
        case conflictsWith = "conflicts_with"
        case validationKind = "validation_kind"
        case trustedCerts = "trusted_certs"
        case untrustedIntermediates = "untrusted_intermediates"
        case peerCertificate = "peer_certificate"
        case validationTime = "validation_time"
        case expectedResult = "expected_result"
        case expectedPeerName = "expected_peer_name"
        case maxChainDepth = "max_chain_depth"
    }

    var expectsSuccess: Bool { expectedResult == "SUCCESS" }

    /// limbo's maximum depth counts intermediates (OpenSSL's `X509_VERIFY_PARAM_set_depth`); pinpath's counts
    /// every certificate of the path, the leaf and the anchor included.
    var maximumDepth: Int? { maxChainDepth.map { $0 + 2 } }

    /// The time to verify at: limbo's, to the second as OpenSSL checks (`2024-03-01T00:00:00.999+00:00`).
    var verificationDate: Date? {
        get throws {
            guard let text = validationTime else { return nil }
            let whole = text.replacing(/\.\d+/, with: "")
            return try Date.ISO8601FormatStyle().parse(whole)
        }
    }

    /// What pinpath made of the case: accepted or not, and why, in a line.
    struct Outcome {
        var accepted: Bool
        var summary: String
    }

    /// Runs the case through the public API. Input pinpath refuses to load (a certificate OpenSSL cannot parse,
    /// a CRL without nextUpdate) is a refusal, as it would be for a user giving it.
    func evaluate(profile: VerificationProfile) -> Outcome {
        do {
            let served =
                try Certificate.certificates(pem: peerCertificate, source: "\(id) peer_certificate")
                + untrustedIntermediates.flatMap { try Certificate.certificates(pem: $0, source: "\(id) intermediate") }
            let anchors = try trustedCerts.flatMap { try Certificate.certificates(pem: $0, source: "\(id) trusted") }
            let lists = try crls.map { try CertificateRevocationList(derBytes: Self.pemBody($0)) }
            let evaluation = try SecurityPolicy(mode: .none).evaluate(
                servedChain: served, host: expectedPeerName?.value ?? "", trustStore: try TrustStore(certificates: anchors),
                verificationTime: try verificationDate, profile: profile, maximumDepth: maximumDepth, crls: lists)
            return Outcome(
                accepted: evaluation.verdict == .trusted,
                summary: evaluation.failure.map { "refused: \($0.message)" } ?? "accepted")
        } catch {
            return Outcome(accepted: false, summary: "refused input: \(error)")
        }
    }

    /// Writes the case's files into `directory` and returns `pinpath verify`'s arguments for them.
    func verifyArguments(in directory: String) throws -> [String] {
        let base = "\(directory)/\(id.replacing(/[^A-Za-z0-9.-]/, with: "_"))"
        try ([peerCertificate] + untrustedIntermediates).joined().write(toFile: "\(base).chain.pem", atomically: true, encoding: .utf8)
        try trustedCerts.joined().write(toFile: "\(base).ca.pem", atomically: true, encoding: .utf8)
        var arguments = ["\(base).chain.pem", "--ca-file", "\(base).ca.pem"]
        if let host = expectedPeerName?.value { arguments += ["--host", host] }
        if let date = try verificationDate { arguments += ["--at", "@\(Int(date.timeIntervalSince1970))"] }
        if let maximumDepth { arguments += ["--max-depth", "\(maximumDepth)"] }
        if !crls.isEmpty {
            try crls.joined().write(toFile: "\(base).crl.pem", atomically: true, encoding: .utf8)
            arguments += ["--crl", "\(base).crl.pem"]
        }
        return arguments
    }

    /// The DER bytes of a single-block PEM text.
    static func pemBody(_ pem: String) throws -> [UInt8] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Array(try #require(Data(base64Encoded: body), "a PEM block that is not base64"))
    }
}
