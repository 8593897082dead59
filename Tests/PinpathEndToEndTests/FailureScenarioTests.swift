import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 31's three internal services, as an operator who runs blackbox_exporter would meet them: a private CA's
/// leaf without extended key usage under a forced `webpki` profile, a leaf without an Authority Key Identifier
/// that expired 4 days ago, and a key rotated to one the pins do not name. The built `pinpath run` probes three
/// `openssl s_server`s; each failure has its own category in `probe.completed` and in `/metrics`
/// (`pinpath_probe_failure_info`), the expired one says so before the missing AKI, and every refused handshake
/// still says where it connected (address, TLS version, phases, the served chain).
@Suite("Three failures told apart", .serialized)
struct FailureScenarioTests {
    /// The services' certificates, generated once per run: a root, and one leaf per service (all for 127.0.0.1).
    /// `openssl ca` sets the expired leaf's dates (the only OpenSSL 3.0 tool that does) and leaves out its key
    /// identifiers when the section says `none`; the script checks that it did.
    static let directory = GeneratedDirectory.make(
        "pinpath-three-failures", what: "the three services' certificates",
        script: #"""
            set -euo pipefail
            cd "$1"
            mkdir -p newcerts; export CA=root; : > root.index; echo 1000 > serial
            cat > ca.cnf <<'CNF'
            \#(OpenSSLCAFiles.commonConfiguration)
            [ no_eku ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature, keyEncipherment
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            subjectAltName = IP:127.0.0.1
            [ no_aki ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectKeyIdentifier = none
            authorityKeyIdentifier = none
            subjectAltName = IP:127.0.0.1
            [ leaf ]
            basicConstraints = CA:false
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid
            subjectAltName = IP:127.0.0.1
            CNF
            key() { openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key" 2>/dev/null; }
            pin() { openssl pkey -in "$1.key" -pubout -outform der | openssl dgst -sha256 -binary | base64; }
            key root
            openssl req -x509 -new -key root.key -subj "/CN=Internal Root" -days 3650 -out root.pem \
              -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign"
            # sign name section start end
            sign() {
              openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$1.internal" -out "$1.csr"
              openssl ca -batch -config ca.cnf -cert root.pem -keyfile root.key -in "$1.csr" -out "$1.pem" -extensions "$2" \
                -startdate "$3" -enddate "$4" -notext 2>/dev/null
            }
            at() { date -u -d "$1" +%Y%m%d%H%M%SZ; }
            key noeku; sign noeku no_eku "$(at '10 days ago')" "$(at '300 days')"
            key expired; sign expired no_aki "$(at '100 days ago')" "$(at '4 days ago')"
            key rotated; sign rotated leaf "$(at '10 days ago')" "$(at '300 days')"
            # The pins name the key before the rotation and a backup key: neither is the served one.
            key old; key backup; pin old > old.pin; pin backup > backup.pin
            if openssl x509 -in expired.pem -noout -text | grep -q "Authority Key Identifier"; then
              echo "expired.pem has an Authority Key Identifier" >&2; exit 1
            fi
            """#)

    static func file(_ name: String) -> String { "\(directory)/\(name)" }

    static func pin(_ name: String) throws -> String {
        try String(contentsOfFile: file("\(name).pin"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The service, the category its failure must have, and its server.
    struct Service {
        let name: String
        let category: String
        let server: TLSServer
    }

    @Test(
        "SecurityPolicy.evaluate: the expired leaf without AKI is refused for its expiry first, then the missing AKI, in every profile",
        arguments: [VerificationProfile.webpki, .rfc5280])
    func expiredFirst(profile: VerificationProfile) throws {
        let store = try TrustStore(certificates: try Certificate.certificates(contentsOf: Self.file("root.pem")))
        let policy = try SecurityPolicy(mode: .none, profile: ProfileSelection(profile))
        let evaluation = try policy.evaluate(
            servedChain: try Certificate.certificates(contentsOf: Self.file("expired.pem")), host: "127.0.0.1", trustStore: store)
        let failure = try #require(evaluation.failure)
        #expect(failure.isOutsideValidity)
        #expect(failure.verifyError == 10 && failure.depth == 0, "\(failure)")
        #expect(failure.message.hasPrefix("127.0.0.1: certificate has expired at depth 0 (CN=expired.internal): notAfter "), "\(failure)")
        #expect(
            failure.message.hasSuffix("; also: certificate verify failed at depth 0: Missing Authority Key Identifier (X509_V_ERR 85)"),
            "\(failure)")
        #expect(!evaluation.chainValidated)
    }

    @Test("ATTACK: a served chain of 40 certificates puts at most 10 subjects into probe.completed's served_chain")
    func servedChainBounded() throws {
        let store = try TrustStore(certificates: try Certificate.certificates(contentsOf: Self.file("root.pem")))
        let leaf = try Certificate.certificates(contentsOf: Self.file("rotated.pem"))
        let padding = try Certificate.certificates(contentsOf: Self.file("noeku.pem"))
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: leaf + Array(repeating: padding[0], count: 39), host: "127.0.0.1", trustStore: store)
        var result = ProbeResult(endpoint: "api", outcome: .failure, started: Date())
        result.evaluation = evaluation
        let event = AgentEvents.probeCompleted(result, connectivity: nil)
        guard case .array(let chain)? = event.fields.first(where: { $0.0 == "served_chain" })?.1 else {
            Issue.record("no served_chain array: \(event.fields)")
            return
        }
        #expect(chain.count == AgentEvents.servedChainLimit)
    }

    @Test(
        """
        pinpath run: a no-EKU leaf under webpki, an expired leaf without AKI and a rotated key are tls_invalid, tls_expired and \
        policy_rejected in probe.completed and pinpath_probe_failure_info; expired is named first; each refused handshake has \
        remote_address, tls_version, phases and the served chain
        """)
    func threeServices() async throws {
        let scene = try TemporaryDirectory()
        var services: [Service] = []
        defer { for service in services { service.server.stop() } }
        for (name, category) in [("noeku", "tls_invalid"), ("expired", "tls_expired"), ("rotated", "policy_rejected")] {
            let server = try TLSServer(
                certificate: Self.file("\(name).pem"), key: Self.file("\(name).key"), chain: [], in: scene.path)
            services.append(Service(name: name, category: category, server: server))
        }
        let listen = "127.0.0.1:\(try TLSServer.freePort())"
        let root = Self.file("root.pem")
        try """
        events: { output: \(scene.file("events.jsonl")), probes: all }
        policies:
          internal_webpki: { mode: none, ca_file: \(root), profile: webpki }
          internal: { mode: none, ca_file: \(root) }
          pinned: { mode: public_key, ca_file: \(root), pins: ["sha256/\(try Self.pin("old"))", "sha256/\(try Self.pin("backup"))"] }
        endpoints:
          - { name: noeku, url: "https://127.0.0.1:\(services[0].server.port)/", policy: internal_webpki, interval: 3s, timeout: 3s, failure_threshold: 1 }
          - { name: expired, url: "https://127.0.0.1:\(services[1].server.port)/", policy: internal, interval: 3s, timeout: 3s, failure_threshold: 1 }
          - { name: rotated, url: "https://127.0.0.1:\(services[2].server.port)/", policy: pinned, interval: 3s, timeout: 3s, failure_threshold: 1 }
        metrics:
          listen: "\(listen)"

        """.write(toFile: scene.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", scene.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.kill(agent) }

        // Every service's category in /metrics, each with its TLS version and duration although it failed.
        var metrics = ""
        try await MetricsEndpointTests.wait("the three failure categories in /metrics") {
            metrics = try MetricsEndpointTests.fetch(listen, "/metrics")?.body ?? ""
            return services.allSatisfy {
                MetricsEndpointTests.value(#"pinpath_probe_failure_info{endpoint="\#($0.name)",category="\#($0.category)"}"#, in: metrics)
                    == 1
            }
        }
        for service in services {
            let lines = metrics.split(separator: "\n").filter { $0.contains(#"endpoint="\#(service.name)""#) }
            #expect(
                lines.filter { $0.hasPrefix("pinpath_probe_failure_info{") }.count == 1,
                "\(service.name): one category only: \(lines)")
            #expect(MetricsEndpointTests.value(#"probe_success{endpoint="\#(service.name)"}"#, in: metrics) == 0)
            #expect(lines.contains { $0.hasPrefix("probe_tls_version_info{") && $0.contains(#"version="TLS 1."#) }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("probe_duration_seconds{") }, "\(lines)")
            #expect(lines.contains { $0.hasPrefix(#"probe_http_duration_seconds{endpoint="\#(service.name)",phase="tls"}"#) }, "\(lines)")
        }
        // The expired chain did not validate: no "verified chain" expiry from it.
        #expect(!metrics.contains(#"probe_ssl_last_chain_expiry_timestamp_seconds{endpoint="expired"}"#), "\(metrics)")

        let events = scene.lines("events.jsonl").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        for service in services {
            let probe = try #require(
                events.first { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == service.name },
                "no probe.completed for \(service.name)")
            #expect(probe["error_category"] as? String == service.category, "\(probe)")
            #expect(probe["remote_address"] as? String == "127.0.0.1:\(service.server.port)", "\(probe)")
            #expect((probe["tls_version"] as? String)?.hasPrefix("TLSv1.") == true, "\(probe)")
            let phases = try #require(probe["phases_ms"] as? [String: Any], "\(probe)")
            #expect(Set(phases.keys) == ["resolve", "connect", "tls"], "\(probe)")
            let chain = try #require(probe["served_chain"] as? [[String: Any]], "\(probe)")
            #expect(chain.first?["subject"] as? String == "CN=\(service.name).internal", "\(probe)")
        }
        let expiredProbe = try #require(
            events.first { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == "expired" })
        let message = try #require(expiredProbe["message"] as? String)
        let expiry = try #require(message.range(of: "certificate has expired at depth 0 (CN=expired.internal)"), "\(message)")
        #expect(message.contains(", 4 days ago"), "\(message)")
        // The other problem is still said, after it.
        let aki = try #require(message.range(of: "Missing Authority Key Identifier"), "\(message)")
        #expect(expiry.lowerBound < aki.lowerBound, "\(message)")

        // An error-level tls.certificate_expired, once, and no "expiring" warning for an outage.
        let expired = events.filter { $0["event"] as? String == "tls.certificate_expired" }
        #expect(expired.count == 1, "\(expired)")
        #expect(expired.first?["level"] as? String == "error")
        #expect(expired.first?["endpoint"] as? String == "expired")
        #expect(expired.first?["days_expired"] as? Int == 4)
        #expect(!events.contains { $0["event"] as? String == "tls.certificate_expiring" && $0["endpoint"] as? String == "expired" })
    }

    @Test(
        """
        pinpath request --json and audit --json name each service's failure with the category the agent gives it \
        (tls_invalid, tls_expired, policy_rejected): one vocabulary; the expired one's message names the expiry first
        """)
    func commandsNameTheSameCategory() throws {
        let scene = try TemporaryDirectory()
        let pins = ["--pin", "sha256/\(try Self.pin("old"))", "--pin", "sha256/\(try Self.pin("backup"))"]
        let cases: [(name: String, category: String, exit: (request: Int32, audit: Int32), flags: [String])] = [
            ("noeku", "tls_invalid", (2, 2), ["--profile", "webpki"]),
            ("expired", "tls_expired", (2, 2), []),
            ("rotated", "policy_rejected", (1, 1), pins),
        ]
        for service in cases {
            let server = try TLSServer(
                certificate: Self.file("\(service.name).pem"), key: Self.file("\(service.name).key"), chain: [], in: scene.path)
            defer { server.stop() }
            let flags = ["--ca-file", Self.file("root.pem")] + service.flags + ["--json"]

            let request = try Shell.run([Shell.pinpath, "request", "https://127.0.0.1:\(server.port)/"] + flags)
            #expect(request.status == service.exit.request, "\(service.name): \(request.stdout)\(request.stderr)")
            let requestObject = try #require(
                try JSONSerialization.jsonObject(with: Data(request.stdout.utf8)) as? [String: Any], "\(request.stdout)")
            let requestError = try #require(requestObject["error"] as? [String: Any], "\(requestObject)")
            #expect(requestError["category"] as? String == service.category, "\(service.name): \(requestError)")

            let audit = try Shell.run([Shell.pinpath, "audit", "127.0.0.1:\(server.port)"] + flags)
            #expect(audit.status == service.exit.audit, "\(service.name): \(audit.stdout)\(audit.stderr)")
            let auditObject = try #require(
                try JSONSerialization.jsonObject(with: Data(audit.stdout.utf8)) as? [String: Any], "\(audit.stdout)")
            let auditError = try #require(auditObject["error"] as? [String: Any], "\(auditObject)")
            #expect(auditError["category"] as? String == service.category, "\(service.name): \(auditError)")
            #expect(auditError["exit_code"] as? Int == Int(service.exit.audit), "\(auditError)")
            #expect(auditObject["tls_version"] as? String != nil, "\(auditObject)")
            let auditText = try Shell.run(
                [Shell.pinpath, "audit", "127.0.0.1:\(server.port)", "--ca-file", Self.file("root.pem")] + service.flags)
            #expect(auditText.stdout.contains("\n  category   \(service.category)\n  result     "), "\(auditText.stdout)")
            if service.name == "expired" {
                for message in [requestError["message"], auditError["message"]] {
                    #expect((message as? String)?.contains("certificate has expired at depth 0") == true, "\(String(describing: message))")
                }
            }
        }
    }
}
