import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathHTTP

/// Issue 11, rules 1 and 2, end to end: `openssl s_server` on loopback serves a forged chain (a leaf that
/// only names the pinned certificate as its issuer, then the genuine pinned certificate) or the attacker's
/// self-signed certificate, and every user path refuses it in the handshake: the library (`Session`),
/// `pinpath request` and `pinpath run --once`. Servers run without `-www`, echoing what clients send into a
/// transcript, which must stay free of any request.
@Suite("Forged chains end to end", .serialized)
struct ForgedChainAttackTests {
    let forged = ForgedPKI.shared
    let pki = TestPKI.shared

    /// One attack: the forged leaf (its key is the attacker's), what follows it, and the genuine certificate pinned.
    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        /// Paths are resolved by ``path(_:)``: `pki:` names TestPKI's files.
        var chain: [String]
        var pinned: String
        var testDescription: String { name }
    }

    static let attacks = [
        Attack(name: "forged leaf + genuine private CA", leaf: "forged-private", chain: ["privateca"], pinned: "privateca"),
        Attack(name: "forged leaf + genuine self-signed pinned server", leaf: "forged-self", chain: ["pinnedself"], pinned: "pinnedself"),
        Attack(name: "forged leaf + genuine trusted intermediate", leaf: "forged-inter", chain: ["pki:inter"], pinned: "pki:inter"),
        Attack(name: "corrupted signature + genuine intermediate", leaf: "corrupted-ip", chain: ["pki:inter"], pinned: "pki:inter"),
        Attack(name: "self-signed pinned server, its own signature broken", leaf: "corrupted-self", chain: [], pinned: "pinnedself"),
    ]

    func path(_ name: String, _ suffix: String = "pem") -> String {
        name.hasPrefix("pki:") ? pki.path(String(name.dropFirst(4)), suffix) : forged.path(name, suffix)
    }

    func certificate(_ name: String) throws -> Certificate {
        try #require(try Certificate.certificates(contentsOf: path(name)).first)
    }

    /// `openssl s_server` echoing into a fresh transcript (`www` false), or answering with a status page.
    func server(leaf: String, chain: [String], www: Bool = false) throws -> (TLSServer, transcript: String) {
        let transcript = "\(forged.directory)/transcript-\(UUID().uuidString)"
        let server = try TLSServer(
            certificate: path(leaf), key: path(leaf, "key"), chain: chain.map { path($0) }, in: forged.directory, www: www,
            transcript: transcript)
        return (server, transcript)
    }

    static func requests(in transcript: String) -> String {
        let text = (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? ""
        return text.contains("GET ") || text.contains("HTTP/1.1") ? text : ""
    }

    // MARK: Rule 1

    @Test(
        "Session: a forged chain fails as tls_invalid with invalid certificates allowed, in both modes, and no request is sent",
        arguments: attacks)
    func session(_ attack: Attack) async throws {
        let (server, transcript) = try server(leaf: attack.leaf, chain: attack.chain)
        defer { server.stop() }
        let pinned = try certificate(attack.pinned)
        for mode in [PinningMode.publicKey, .certificate] {
            for allowInvalid in [true, false] {
                let policy = try SecurityPolicy(
                    mode: mode, pins: mode == .publicKey ? [pinned.spkiPin] : [], pinnedCertificates: mode == .certificate ? [pinned] : [],
                    allowInvalidCertificates: allowInvalid, requiresBackupPin: false)
                var configuration = Session.Configuration(trustStore: try pki.trustStore())
                configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: "127.0.0.1")], policy: policy)])
                var options = RequestOptions()
                options.timeout = TestTime.scaled(.seconds(5))
                options.freshConnection = true
                let request = SessionRequest(method: .get, url: URL(string: "https://127.0.0.1:\(server.port)/")!)
                do throws(HTTPError) {
                    let response = try await Session(configuration).send(request, options: options)
                    Issue.record("\(attack.name), \(mode), allowInvalid \(allowInvalid): status \(response.statusCode)")
                } catch {
                    #expect(error.code == .tlsInvalid, "\(mode), allowInvalid \(allowInvalid): \(error.message)")
                    #expect(error.evaluation?.failure?.verifyError == 7, "\(error.message)")
                    #expect(error.evaluation?.verifiedChain.contains(pinned) == false)
                }
            }
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test("pinpath request --pin --ca-file: a forged chain exits 2 (tls_invalid) and no request is sent", arguments: attacks)
    func requestCommand(_ attack: Attack) throws {
        // `pinpath request` has no way to allow invalid certificates: it checks the chain against --ca-file
        // (or the system store) and the pin against the verified chain. Both stores are tried: the test
        // store (knows the intermediate's root) and a file holding just the pinned certificate.
        let (server, transcript) = try server(leaf: attack.leaf, chain: attack.chain)
        defer { server.stop() }
        let pin = try certificate(attack.pinned).spkiPin.description
        for caFile in [pki.path("store"), path(attack.pinned)] {
            let result = try Shell.run([
                Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/", "--pin", pin, "--ca-file", caFile, "--timeout", "5",
            ])
            #expect(result.status == 2, "\(caFile): exit \(result.status): \(result.stderr)")
            #expect(result.stderr.contains("signature failure"), "\(result.stderr)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    /// A configuration with one endpoint on `port` per policy given (name → YAML body), written to a file.
    func configuration(port: UInt16, policies: [(String, String)]) throws -> String {
        var text = "events: { output: stdout, probes: all }\npolicies:\n"
        for (name, body) in policies {
            text += "  \(name):\n" + body.split(separator: "\n").map { "    \($0)\n" }.joined()
        }
        text += "endpoints:\n"
        for (name, _) in policies {
            text += "  - { name: \(name), url: \"https://127.0.0.1:\(port)/\", policy: \(name), timeout: \(TestTime.yamlSeconds(5)) }\n"
        }
        let file = "\(forged.directory)/agent-\(UUID().uuidString).yaml"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    /// `pinpath run --once`: the exit status and each endpoint's `probe.completed` event.
    static func runOnce(_ configuration: String) throws -> (status: Int32, probes: [String: [String: Any]], output: String) {
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", configuration])
        var probes: [String: [String: Any]] = [:]
        for line in result.stdout.split(separator: "\n") {
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["event"] as? String == "probe.completed", let name = event["endpoint"] as? String
            else { continue }
            probes[name] = event
        }
        return (result.status, probes, result.stdout + result.stderr)
    }

    /// The YAML of a policy pinning `pinned` with invalid certificates allowed, in each mode.
    func allowInvalidPolicies(pinned: String) throws -> [(String, String)] {
        [
            (
                "public-key",
                """
                mode: public_key\npins: [\"\(try certificate(pinned).spkiPin)\"]\nrequire_backup_pin: \
                false\nallow_invalid_certificates: true
                """
            ),
            ("certificate", "mode: certificate\ncertificates: [\(path(pinned))]\nallow_invalid_certificates: true"),
        ]
    }

    @Test(
        "pinpath run --once with allow_invalid_certificates: a forged chain is tls_invalid in both modes, and no request is sent",
        arguments: attacks)
    func agent(_ attack: Attack) throws {
        let (server, transcript) = try server(leaf: attack.leaf, chain: attack.chain)
        defer { server.stop() }
        let run = try Self.runOnce(try configuration(port: server.port, policies: try allowInvalidPolicies(pinned: attack.pinned)))
        #expect(run.status == 1, "\(run.output)")
        for name in ["public-key", "certificate"] {
            let probe = try #require(run.probes[name], "no probe.completed for \(name): \(run.output)")
            #expect(probe["outcome"] as? String == "failure", "\(name): \(probe)")
            #expect(probe["error_category"] as? String == "tls_invalid", "\(name): \(probe)")
            #expect((probe["message"] as? String)?.contains("signature failure") == true, "\(name): \(probe)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }

    @Test(
        """
        pinpath run --once with allow_invalid_certificates: the genuine self-signed server and the genuine chain under an \
        untrusted CA pass
        """
    )
    func agentGenuine() throws {
        for (leaf, chain, pinned) in [("pinnedself", [String](), "pinnedself"), ("privateleaf", ["privateca"], "privateca")] {
            let (server, _) = try server(leaf: leaf, chain: chain, www: true)
            defer { server.stop() }
            let run = try Self.runOnce(try configuration(port: server.port, policies: try allowInvalidPolicies(pinned: pinned)))
            #expect(run.status == 0, "\(leaf): \(run.output)")
            for name in ["public-key", "certificate"] {
                #expect(run.probes[name]?["outcome"] as? String == "success", "\(leaf), \(name): \(run.probes[name] ?? [:])")
            }
        }
    }

    // MARK: Rule 2

    @Test(
        """
        check-config refuses allow_invalid_certificates with expired or report-only pins (exit 78, line:column), and warns about \
        expired pins (exit 0)
        """
    )
    func checkConfig() throws {
        let pin = try certificate("pinnedself").spkiPin
        let refused: [(String, String)] = [
            ("expires: 2020-01-01", "renew the pins and move expires to a later date, or set allow_invalid_certificates: false"),
            ("enforce: false", "set enforce: true, or allow_invalid_certificates: false"),
        ]
        for (line, advice) in refused {
            for mode in ["mode: public_key\n    pins: [\"\(pin)\"]", "mode: certificate\n    certificates: [\(path("pinnedself"))]"] {
                let file = "\(forged.directory)/refused-\(UUID().uuidString).yaml"
                try """
                policies:
                  lenient:
                    \(mode)
                    require_backup_pin: false
                    allow_invalid_certificates: true
                    \(line)

                """.write(toFile: file, atomically: true, encoding: .utf8)
                let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
                #expect(result.status == 78, "\(line): \(result.stdout) \(result.stderr)")
                #expect(
                    result.stderr.contains("pinpath: error: \(file):2:3: policies.lenient: allow_invalid_certificates with"),
                    "\(result.stderr)")
                #expect(result.stderr.contains("would accept any certificate") && result.stderr.contains(advice), "\(result.stderr)")
            }
        }

        let expired = "\(forged.directory)/expired-\(UUID().uuidString).yaml"
        try """
        policies:
          old-pins:
            mode: public_key
            pins: ["\(pin)"]
            require_backup_pin: false
            expires: 2020-01-01

        """.write(toFile: expired, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", expired])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains(
                "pinpath: warning: \(expired):6:14: policies.old-pins.expires: the pins expired on 2020-01-01 and are no longer checked"),
            "\(result.stderr)")
        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", expired])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let warnings = try #require(object["warnings"] as? [[String: Any]], "\(json.stdout)")
        #expect(warnings.map { $0["code"] as? String } == ["nothing_to_monitor", "expired_pins"], "\(warnings)")
    }

    @Test("pinpath run --once with expired pins (no allow_invalid): the attacker's self-signed certificate is tls_invalid, no request sent")
    func expiredPinsAgent() throws {
        let (server, transcript) = try server(leaf: "attackerself", chain: [])
        defer { server.stop() }
        let pin = try certificate("pinnedself").spkiPin
        let configuration = try configuration(
            port: server.port,
            policies: [
                ("expired-public-key", "mode: public_key\npins: [\"\(pin)\"]\nrequire_backup_pin: false\nexpires: 2020-01-01"),
                ("expired-certificate", "mode: certificate\ncertificates: [\(path("pinnedself"))]\nexpires: 2020-01-01"),
                ("report-only", "mode: public_key\npins: [\"\(pin)\"]\nenforce: false"),
            ])
        let run = try Self.runOnce(configuration)
        #expect(run.status == 1, "\(run.output)")
        for name in ["expired-public-key", "expired-certificate", "report-only"] {
            let probe = try #require(run.probes[name], "no probe.completed for \(name): \(run.output)")
            #expect(probe["outcome"] as? String == "failure" && probe["error_category"] as? String == "tls_invalid", "\(name): \(probe)")
        }
        #expect(Self.requests(in: transcript).isEmpty, "the server received: \(Self.requests(in: transcript))")
    }
}
