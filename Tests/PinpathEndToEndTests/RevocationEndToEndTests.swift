import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Revocation end to end: `openssl s_server` on loopback serves ``RevocationPKI``'s leaves, stapling OCSP
/// responses made by `openssl ocsp -respout` (`-status_file`) or none, and every user path judges them in the
/// handshake: the library (`Session`), `pinpath request`, `pinpath run --once` and `pinpath audit`. Servers
/// that must be refused echo what clients send into a transcript, which must stay free of any request.
@Suite("Revocation end to end", .serialized)
struct RevocationEndToEndTests {
    let pki = RevocationPKI.shared

    /// A server for `leaf` (chain: its issuer), stapling `staple` (a file of the PKI) when given.
    func server(_ leaf: String, issuer: String = "inter", staple: String? = nil, tls12: Bool = false, www: Bool = false)
        throws -> (TLSServer, transcript: String)
    {
        let transcript = pki.file("transcript-\(UUID().uuidString)")
        var extra = staple.map { ["-status_file", pki.file($0)] } ?? []
        if tls12 { extra.append("-tls1_2") }
        let server = try TLSServer(
            certificate: pki.file("\(leaf).pem"), key: pki.file("\(leaf).key"), chain: [pki.file("\(issuer).pem")],
            in: pki.directory, www: www, transcript: www ? nil : transcript, extraArguments: extra)
        return (server, transcript)
    }

    static func requests(in transcript: String) -> String {
        let text = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
        return text.contains("GET ") || text.contains("HTTP/1.1") ? text : ""
    }

    /// One GET through a Session whose policy for 127.0.0.1 is `policy`, trusting the revocation PKI's root.
    func send(port: UInt16, policy: SecurityPolicy) async throws -> Result<SessionResponse, HTTPError> {
        var configuration = Session.Configuration(trustStore: try pki.trustStore())
        configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)])
        var options = RequestOptions()
        options.timeout = TestTime.scaled(.seconds(5))
        options.freshConnection = true
        let request = SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(port)/")!)
        do throws(HTTPError) {
            return .success(try await Session(configuration).send(request, options: options))
        } catch {
            return .failure(error)
        }
    }

    /// A scene the handshake must refuse, and the failure reason and message part expected.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        var staple: String?
        var revocation: RevocationMode
        var crls: [String] = []
        var tls12 = false
        var reason: String
        var messagePart: String
        var testDescription: String { name }
    }

    static let refusals = [
        Refusal(
            name: "revoked staple (TLS 1.3), stapled", leaf: "revoked", staple: "revoked.ocsp", revocation: .stapled, reason: "revoked",
            messagePart: "says it was revoked"),
        Refusal(
            name: "revoked staple (TLS 1.2), stapled", leaf: "revoked", staple: "revoked.ocsp", revocation: .stapled, tls12: true,
            reason: "revoked", messagePart: "says it was revoked"),
        Refusal(
            name: "revoked staple, require_stapled", leaf: "revoked", staple: "revoked.ocsp", revocation: .requireStapled,
            reason: "revoked", messagePart: "says it was revoked"),
        Refusal(
            name: "no staple, require_stapled", leaf: "good", staple: nil, revocation: .requireStapled, reason: "ocsp_staple_missing",
            messagePart: "the policy requires one (revocation: require_stapled)"),
        Refusal(
            name: "must-staple leaf without staple, revocation none", leaf: "muststaple", staple: nil, revocation: .none,
            reason: "ocsp_staple_missing", messagePart: "is must-staple"),
        Refusal(
            name: "must-staple leaf without staple (TLS 1.2), stapled", leaf: "muststaple", staple: nil, revocation: .stapled, tls12: true,
            reason: "ocsp_staple_missing", messagePart: "is must-staple"),
        Refusal(
            name: "forged 'good' staple for a revoked leaf, signed by an undelegated responder", leaf: "revoked",
            staple: "forged-good.ocsp", revocation: .stapled, reason: "ocsp_staple_invalid", messagePart: "signature is not the issuer's"),
        Refusal(
            name: "another certificate's good staple replayed for a revoked leaf", leaf: "revoked", staple: "good.ocsp",
            revocation: .stapled, reason: "ocsp_staple_invalid", messagePart: "is not about CN=valid.test"),
        // Issue 25: a staple's CertID may be hashed with any digest (RFC 6960); each must still name this leaf.
        Refusal(
            name: "revoked staple hashed with SHA-256, require_stapled", leaf: "revoked", staple: "revoked-sha256.ocsp",
            revocation: .requireStapled, reason: "revoked", messagePart: "says it was revoked"),
        Refusal(
            name: "another certificate's good staple hashed with SHA-256 replayed for a revoked leaf", leaf: "revoked",
            staple: "good-sha256.ocsp", revocation: .requireStapled, reason: "ocsp_staple_invalid",
            messagePart: "is not about CN=valid.test"),
        Refusal(
            name: "a good staple whose CertID is hashed with MD5", leaf: "good", staple: "good-md5.ocsp", revocation: .requireStapled,
            reason: "ocsp_staple_invalid", messagePart: "certificate IDs hashed with MD5 are not accepted"),
        Refusal(
            name: "a staple listing the revoked leaf as good under SHA-256 first, then revoked under SHA-1", leaf: "revoked",
            staple: "revoked-also-good.ocsp", revocation: .stapled, reason: "revoked", messagePart: "says it was revoked"),
        Refusal(
            name: "revoked leaf by CRL", leaf: "revoked", staple: nil, revocation: .none, crls: ["all"], reason: "revoked",
            messagePart: "certificate revoked at depth 0"),
        Refusal(
            name: "no CRL from the leaf's issuer", leaf: "good", staple: nil, revocation: .none, crls: ["rootonly"], reason: "crl_missing",
            messagePart: "unable to get certificate CRL"),
        Refusal(
            name: "stale CRL", leaf: "good", staple: nil, revocation: .none, crls: ["root", "inter-stale"], reason: "crl_stale",
            messagePart: "CRL has expired"),
    ]

    // MARK: Session

    @Test(
        "Session: the handshake refuses, as revoked (a revocation) or tls_invalid (the rest) with the reason, and no request is sent",
        arguments: refusals)
    func sessionRefuses(_ refusal: Refusal) async throws {
        let (server, transcript) = try server(refusal.leaf, staple: refusal.staple, tls12: refusal.tls12)
        defer { server.stop() }
        let policy = try SecurityPolicy(mode: .none, crls: try refusal.crls.flatMap(pki.crls), revocation: refusal.revocation)
        switch try await send(port: server.port, policy: policy) {
        case .success(let response):
            Issue.record("accepted: status \(response.statusCode)")
        case .failure(let error):
            #expect(error.code == (refusal.reason == "revoked" ? .revoked : .tlsInvalid), "\(error.code): \(error.message)")
            #expect(error.evaluation?.failure?.reason.description == refusal.reason, "\(error.message)")
            #expect(error.message.contains(refusal.messagePart), "\(error.message)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test(
        """
        Session: a good staple (its CertID hashed with SHA-1, SHA-256, SHA-384 or SHA-512) passes under every mode and is \
        recorded (status, responder, validity); a revoked one is only recorded under none
        """
    )
    func sessionAccepts() async throws {
        for (leaf, staple, issuerSigned) in [
            ("good", "good.ocsp", false), ("good", "good-by-inter.ocsp", true), ("muststaple", "muststaple.ocsp", false),
            ("good", "good-sha256.ocsp", false), ("good", "good-sha384.ocsp", false), ("good", "good-sha512.ocsp", false),
        ] {
            let (server, _) = try server(leaf, staple: staple, www: true)
            defer { server.stop() }
            for mode in RevocationMode.allCases {
                let response = try await send(port: server.port, policy: try SecurityPolicy(mode: .none, revocation: mode)).get()
                #expect(response.statusCode == 200)
                let recorded = try #require(response.tls?.evaluation?.ocspStaple, "\(staple), \(mode): no staple recorded")
                #expect(recorded.status == .good)
                #expect(recorded.problem == nil, "\(recorded.problem ?? "")")
                #expect(recorded.responder == (issuerSigned ? "CN=Revocation Test Intermediate" : "CN=Revocation Test OCSP Responder"))
                let thisUpdate = try #require(recorded.thisUpdate)
                let nextUpdate = try #require(recorded.nextUpdate)
                #expect(nextUpdate.timeIntervalSince(thisUpdate) == 86_400)
            }
        }
        let (server, _) = try server("revoked", staple: "revoked.ocsp", www: true)
        defer { server.stop() }
        let response = try await send(port: server.port, policy: try SecurityPolicy(mode: .none)).get()
        #expect(response.tls?.evaluation?.ocspStaple?.status == .revoked)
        // No staple under `stapled`: accepted.
        let (plain, _) = try self.server("good", www: true)
        defer { plain.stop() }
        let unstapled = try await send(port: plain.port, policy: try SecurityPolicy(mode: .none, revocation: .stapled)).get()
        #expect(unstapled.statusCode == 200)
        #expect(unstapled.tls?.evaluation?.ocspStaple == nil)
    }

    // MARK: pinpath request

    func requestArguments(_ refusal: Refusal) -> [String] {
        refusal.crls.flatMap { ["--crl", pki.file("\($0).crl")] } + ["--revocation", refusal.revocation.rawValue]
    }

    @Test("pinpath request --crl / --revocation: exit 2 with the reason, and no request is sent", arguments: refusals)
    func requestCommandRefuses(_ refusal: Refusal) throws {
        let (server, transcript) = try server(refusal.leaf, staple: refusal.staple, tls12: refusal.tls12)
        defer { server.stop() }
        let result = try Shell.run(
            [Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", pki.file("root.pem"), "--timeout", "5"]
                + requestArguments(refusal))
        #expect(result.status == 2, "exit \(result.status): \(result.stderr)")
        let category = refusal.reason == "revoked" ? "revoked" : "tls_invalid"
        #expect(result.stderr.contains(category) && result.stderr.contains(refusal.messagePart), "\(result.stderr)")
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test(
        """
        pinpath request: a good chain with current CRLs and a good staple exits 0 (--json names the staple's status); a CRL file \
        that is not one exits 64 naming it; a good staple hashed with SHA-256 exits 0 too
        """
    )
    func requestCommandAccepts() throws {
        for staple in ["good.ocsp", "good-sha256.ocsp"] {
            let (server, _) = try server("good", staple: staple, www: true)
            defer { server.stop() }
            let result = try Shell.run([
                Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", pki.file("root.pem"), "--timeout", "5",
                "--crl", pki.file("all.crl"), "--revocation", "require_stapled", "--json",
            ])
            #expect(result.status == 0, "\(staple): exit \(result.status): \(result.stderr)")
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect((summary["tls"] as? [String: Any])?["ocsp_staple"] as? String == "good", "\(staple): \(result.stdout)")
        }
        let (server, _) = try server("good", staple: "good.ocsp", www: true)
        defer { server.stop() }
        let bad = try Shell.run([
            Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--ca-file", pki.file("root.pem"), "--crl", pki.file("good.pem"),
        ])
        #expect(bad.status == 64, "exit \(bad.status): \(bad.stderr)")
        #expect(bad.stderr.contains("--crl \(pki.file("good.pem")): no certificate revocation list found"), "\(bad.stderr)")
    }

    // MARK: pinpath run --once

    @Test(
        """
        pinpath run --once: crl_files and revocation refuse revoked servers with the reason in the probe's message; the OCSP \
        status gauge is written
        """
    )
    func agent() throws {
        let (revokedByCRL, transcriptCRL) = try server("revoked")
        defer { revokedByCRL.stop() }
        let (revokedStaple, transcriptStaple) = try server("revoked", staple: "revoked.ocsp")
        defer { revokedStaple.stop() }
        let (missing, transcriptMissing) = try server("good")
        defer { missing.stop() }
        let (goodStaple, _) = try server("good", staple: "good.ocsp", www: true)
        defer { goodStaple.stop() }
        let (goodSHA256, _) = try server("good", staple: "good-sha256.ocsp", www: true)
        defer { goodSHA256.stop() }
        let (revokedSHA256, transcriptSHA256) = try server("revoked", staple: "revoked-sha256.ocsp")
        defer { revokedSHA256.stop() }
        let metrics = pki.file("metrics-\(UUID().uuidString).prom")
        let configuration = pki.file("agent-\(UUID().uuidString).yaml")
        func endpoint(_ name: String, _ port: UInt16, _ policy: String) -> String {
            "  - { name: \(name), url: \"https://127.0.0.1:\(port)/\", policy: \(policy), timeout: \(TestTime.yamlSeconds(5)) }\n"
        }
        try
            ("""
        events: { output: stdout, probes: all }
        metrics: { textfile: \(metrics) }
        policies:
          crl:
            mode: none
            ca_file: \(pki.file("root.pem"))
            crl_files: [\(pki.file("all.crl"))]
          stapled:
            mode: none
            ca_file: \(pki.file("root.pem"))
            revocation: stapled
          required:
            mode: none
            ca_file: \(pki.file("root.pem"))
            revocation: require_stapled
        endpoints:

        """
            + endpoint("revoked-by-crl", revokedByCRL.port, "crl") + endpoint("revoked-staple", revokedStaple.port, "stapled")
            + endpoint("missing-staple", missing.port, "required") + endpoint("good-staple", goodStaple.port, "required")
            + endpoint("good-staple-sha256", goodSHA256.port, "required")
            + endpoint("revoked-staple-sha256", revokedSHA256.port, "required")).write(
                toFile: configuration, atomically: true, encoding: .utf8)
        let run = try Shell.run([Shell.pinpath, "run", "--once", "--config", configuration])
        var probes: [String: [String: Any]] = [:]
        for line in run.stdout.split(separator: "\n") {
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["event"] as? String == "probe.completed", let name = event["endpoint"] as? String
            else { continue }
            probes[name] = event
        }
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        for (name, part, category) in [
            ("revoked-by-crl", "certificate revoked at depth 0", "revoked"), ("revoked-staple", "says it was revoked", "revoked"),
            ("missing-staple", "stapled no OCSP response", "tls_invalid"), ("revoked-staple-sha256", "says it was revoked", "revoked"),
        ] {
            let probe = try #require(probes[name], "no probe.completed for \(name): \(run.stdout)")
            #expect(probe["outcome"] as? String == "failure", "\(name): \(probe)")
            #expect(probe["error_category"] as? String == category, "\(name): \(probe)")
            #expect((probe["message"] as? String)?.contains(part) == true, "\(name): \(probe)")
        }
        #expect(probes["good-staple"]?["outcome"] as? String == "success", "\(probes["good-staple"] ?? [:])")
        #expect(probes["good-staple-sha256"]?["outcome"] as? String == "success", "\(probes["good-staple-sha256"] ?? [:])")
        for transcript in [transcriptCRL, transcriptStaple, transcriptMissing, transcriptSHA256] {
            #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
        }
        let text = try String(contentsOfFile: metrics, encoding: .utf8)
        #expect(text.contains("probe_ssl_ocsp_response_status{endpoint=\"good-staple\"} 0"), "\(text)")
        #expect(text.contains("probe_ssl_ocsp_response_status{endpoint=\"good-staple-sha256\"} 0"), "\(text)")
        #expect(text.contains("probe_ssl_ocsp_response_status{endpoint=\"revoked-staple\"} 1"), "\(text)")
        #expect(!text.contains("probe_ssl_ocsp_response_status{endpoint=\"missing-staple\"}"), "\(text)")
    }

    @Test("check-config: crl_files naming a file that is no CRL, and an unknown revocation mode, are configuration errors (exit 78)")
    func configurationErrors() throws {
        for (line, part) in [
            ("crl_files: [\(pki.file("good.pem"))]", "no certificate revocation list found"),
            ("revocation: stapeld", "\"stapeld\" is not one of none, stapled, require_stapled, ocsp; did you mean \"stapled\"?"),
        ] {
            let file = pki.file("config-\(UUID().uuidString).yaml")
            try "policies:\n  p:\n    mode: none\n    \(line)\n".write(toFile: file, atomically: true, encoding: .utf8)
            let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
            #expect(result.status == 78, "\(line): \(result.stdout) \(result.stderr)")
            #expect(result.stderr.contains(part), "\(result.stderr)")
        }
    }

    // MARK: pinpath audit

    @Test("pinpath audit shows the staple (status, responder, validity) and refuses revoked chains with --crl or --revocation (exit 2)")
    func audit() throws {
        let (good, _) = try server("good", staple: "good.ocsp", www: true)
        defer { good.stop() }
        let root = pki.file("root.pem")
        let shown = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(good.port)", "--ca-file", root])
        #expect(shown.status == 0, "\(shown.stdout)\(shown.stderr)")
        #expect(shown.stdout.contains("ocsp       good from CN=Revocation Test OCSP Responder, valid "), "\(shown.stdout)")
        let json = try Shell.run([
            Shell.pinpath, "audit", "127.0.0.1:\(good.port)", "--ca-file", root, "--json", "--crl", pki.file("all.crl"),
        ])
        #expect(json.status == 0, "\(json.stdout)\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let staple = try #require(object["ocsp_staple"] as? [String: Any], "\(json.stdout)")
        #expect(staple["status"] as? String == "good")
        #expect(staple["responder"] as? String == "CN=Revocation Test OCSP Responder")
        #expect(staple["next_update"] is String)

        let (revoked, _) = try server("revoked", staple: "revoked.ocsp", www: true)
        defer { revoked.stop() }
        let noted = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(revoked.port)", "--ca-file", root])
        #expect(noted.status == 0, "revocation none only shows the staple: \(noted.stdout)")
        #expect(noted.stdout.contains("ocsp       revoked from CN=Revocation Test OCSP Responder"), "\(noted.stdout)")
        let refused = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(revoked.port)", "--ca-file", root, "--revocation", "stapled"])
        #expect(refused.status == 2, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stdout.contains("REJECTED") || refused.stdout.contains("says it was revoked"), "\(refused.stdout)")
        let byCRL = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(revoked.port)", "--ca-file", root, "--crl", pki.file("all.crl")])
        #expect(byCRL.status == 2, "\(byCRL.stdout)\(byCRL.stderr)")
        #expect(byCRL.stdout.contains("chain      INVALID: 127.0.0.1: certificate revoked at depth 0"), "\(byCRL.stdout)")

        let (plain, _) = try server("good", www: true)
        defer { plain.stop() }
        let none = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(plain.port)", "--ca-file", root])
        #expect(none.stdout.contains("ocsp       none"), "\(none.stdout)")
    }
}
