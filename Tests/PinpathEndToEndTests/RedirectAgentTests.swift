import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Issue 11, rules 5 and 6, through the agent: `pinpath run --once --config FILE` against recording servers
/// on 127.0.0.1 (host A) and ::1 (host B), both serving the test PKI's `ip` leaf.
///
/// The agent runs with `SSL_CERT_FILE` set to the test roots, so that the system store itself trusts both
/// hosts: a hop that fell back to the system store and no pins would succeed, which is exactly the hole.
@Suite("The agent's redirects and combined policies", .serialized)
struct RedirectAgentTests {
    let pki = TestPKI.shared

    func tlsServer(_ address: String = "127.0.0.1") throws -> RecordingServer {
        try RecordingServer(
            address: address, certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: pki.directory)
    }

    func pins(_ names: [String]) throws -> String {
        try pki.chain(names).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
    }

    /// Runs `pinpath run --once` on `configuration` and returns its exit status and the one probe result.
    func runOnce(_ configuration: String) throws -> (status: Int32, probe: [String: Any], stderr: String) {
        let directory = try TemporaryDirectory()
        try configuration.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([
            "/usr/bin/env", "SSL_CERT_FILE=\(pki.path("store"))", Shell.pinpath, "run", "--once", "--config",
            directory.file("pinpath.yaml"),
        ])
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let probe = try #require(
            events.first { $0["event"] as? String == "probe.completed" }, "no probe.completed: \(result.stdout) \(result.stderr)")
        return (result.status, probe, result.stderr)
    }

    // MARK: 5a

    @Test(
        "A redirect to host B is held to the configured policy for B (pins, CA file): the probe fails, B receives nothing",
        arguments: [("pins", "policy_rejected"), ("ca_file", "tls_invalid")])
    func hopHeldToTargetPolicy(_ mismatch: String, _ category: String) throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        let bPolicy =
            mismatch == "pins"
            ? "{ mode: public_key, pins: [\(try pins(["otherinter", "otherroot"]))], hosts: [\"::1\"] }"
            : "{ mode: none, hosts: [\"::1\"], ca_file: \(pki.path("otherroot")) }"
        let (status, probe, stderr) = try runOnce(
            """
            events: { probes: all }
            policies:
              anchor: { mode: none, hosts: ["127.0.0.1"], ca_file: \(pki.path("store")) }
              host-b: \(bPolicy)
            endpoints:
              - { name: hop, url: "\(a.redirect(302, to: "\(b.origin)/secret"))" }
            """)
        #expect(status == 1, "\(stderr)")
        #expect(probe["outcome"] as? String == "failure")
        #expect(probe["error_category"] as? String == category, "\(probe)")
        #expect(a.requests.count == 1)
        #expect(b.requests.isEmpty, "B received \(b.requests.map(\.path))")
    }

    // MARK: 5b

    @Test("A pinned https endpoint redirected to http: failure with insecure_redirect, the http server receives nothing")
    func httpsToHTTP() throws {
        let a = try tlsServer()
        let plain = try RecordingServer(directory: pki.directory)
        defer {
            a.stop()
            plain.stop()
        }
        let (status, probe, stderr) = try runOnce(
            """
            events: { probes: all }
            policies:
              pinned: { mode: public_key, pins: [\(try pins(["inter", "root"]))], hosts: ["127.0.0.1"], ca_file: \(pki.path("store")) }
            endpoints:
              - name: downgraded
                url: "\(a.redirect(307, to: "\(plain.origin)/collect"))"
                headers: { Authorization: "Bearer secret" }
            """)
        #expect(status == 1, "\(stderr)")
        #expect(probe["outcome"] as? String == "failure")
        #expect(probe["error_category"] as? String == "insecure_redirect", "\(probe)")
        #expect(plain.requests.isEmpty, "the http server received \(plain.requests.map(\.path))")
    }

    // MARK: 5c

    @Test("A cross-host redirect sends host B none of the endpoint's headers but the safe list")
    func crossHostHeaders() throws {
        let a = try tlsServer()
        let b = try tlsServer("::1")
        defer {
            a.stop()
            b.stop()
        }
        let (status, probe, stderr) = try runOnce(
            """
            events: { probes: all }
            policies:
              anchor: { mode: none, hosts: ["127.0.0.1", "::1"], ca_file: \(pki.path("store")) }
            endpoints:
              - name: hop
                url: "\(a.redirect(302, to: "\(b.origin)/landing"))"
                headers:
                  Authorization: "Bearer secret"
                  Proxy-Authorization: "Basic cHJveHk6cHc="
                  X-Api-Key: key
                  Cookie: "session=s"
                  X-Custom: mine
                  User-Agent: agent-test
            """)
        #expect(status == 0, "\(stderr) \(probe)")
        let received = try #require(b.requests.first)
        for name in ["Authorization", "Proxy-Authorization", "X-Api-Key", "Cookie", "X-Custom"] {
            #expect(received.header(name) == nil, "\(name) reached host B")
        }
        #expect(received.header("User-Agent") == "agent-test")
        #expect(a.requests.first?.header("X-Api-Key") == "key")
    }

    // MARK: 6

    @Test(
        "A mode: none policy matching first (or named) does not cancel a later policy's pins: policy_rejected",
        arguments: [false, true])
    func noneDoesNotCancelPins(_ named: Bool) throws {
        let a = try tlsServer()
        defer { a.stop() }
        let (status, probe, stderr) = try runOnce(
            """
            events: { probes: all }
            policies:
              open: { mode: none, hosts: ["127.0.0.1"], ca_file: \(pki.path("store")) }
              pinned: { mode: public_key, pins: [\(try pins(["otherinter", "otherroot"]))], hosts: ["127.0.0.1"] }
            endpoints:
              - { name: api, url: "\(a.origin)/health"\(named ? ", policy: open" : "") }
            """)
        #expect(status == 1, "\(stderr)")
        #expect(probe["error_category"] as? String == "policy_rejected", "\(probe)")
        #expect(a.requests.isEmpty)
    }

    @Test("check-config prints each endpoint's effective policy and the policies it came from, in text and JSON")
    func checkConfigShowsEffectivePolicy() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try """
        policies:
          open: { mode: none, hosts: ["**.example.org"] }
          pinned: { mode: public_key, pins: [\(try pins(["inter", "root"]))], hosts: ["api.example.org"], enforce: false, ca_file: \(pki.path("store")) }
          strict: { mode: public_key, pins: [\(try pins(["otherinter", "otherroot"]))] }
        endpoints:
          - { name: api, url: "https://api.example.org/", policy: strict }
          - { name: www, url: "https://www.example.org/" }
          - { name: plain, url: "https://example.com/" }
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let text = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(
            lines.contains(
                """
                    effective: public_key, 4 pins, enforced, store \(pki.path("store")), profile auto: rfc5280 for an anchor \
                from ca_file (webpki when the system store vouches for it, or with no anchor); from strict (named), open (hosts \
                **.example.org), pinned (hosts api.example.org)
                """
            ), "\(text.stdout)")
        let systemStore = "profile auto: webpki (anchors from the system store)"
        #expect(lines.contains("    effective: none, store system, \(systemStore); from open (hosts **.example.org)"), "\(text.stdout)")
        #expect(
            lines.contains("    effective: none (no policy applies): chain and host name against the system store, \(systemStore)"),
            "\(text.stdout)")

        let json = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let endpoints = try #require(object["endpoints"] as? [[String: Any]])
        let effective = try #require(endpoints[0]["effective_policy"] as? [String: Any])
        #expect(effective["mode"] as? String == "public_key")
        #expect(effective["pins"] as? Int == 4)
        #expect(effective["enforce"] as? Bool == true)
        #expect(effective["ca_file"] as? String == pki.path("store"))
        #expect(effective["profile"] as? String == "auto")
        #expect((effective["profile_meaning"] as? String)?.hasPrefix("auto: rfc5280 for an anchor from ca_file") == true)
        let from = try #require(effective["from"] as? [[String: String]])
        #expect(
            from == [
                ["policy": "strict", "matched_by": "named"], ["policy": "open", "matched_by": "hosts **.example.org"],
                ["policy": "pinned", "matched_by": "hosts api.example.org"],
            ])
        #expect(endpoints[2]["effective_policy"] is NSNull)
    }

    @Test("Policies that can match one host with different CA files: exit 78 at the ca_file, naming both files")
    func conflictingCAFiles() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        let store = pki.path("store")
        let other = pki.path("otherroot")
        try """
        policies:
          wide: { mode: none, hosts: ["**.example.org"], ca_file: \(store) }
          narrow: { mode: none, hosts: ["api.example.org"], ca_file: \(other) }
          disjoint: { mode: none, hosts: ["*.example.net"], ca_file: \(other) }
          named: { mode: none, ca_file: \(other) }
        endpoints:
          - { name: api, url: "https://www.example.org/", policy: named }
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(result.status == 78)
        let narrowColumn = "  narrow: { mode: none, hosts: [\"api.example.org\"], ca_file: ".count + 1
        let policyColumn = "  - { name: api, url: \"https://www.example.org/\", policy: ".count + 1
        #expect(
            result.stderr == """
                pinpath: error: \(file):3:\(narrowColumn): policies.narrow.ca_file: \(other) differs from \(store) (policy "wide"), and both policies apply to hosts that api.example.org and **.example.org both match; give them the same ca_file or make their hosts disjoint
                pinpath: error: \(file):7:\(policyColumn): endpoints[0].policy: policies "named" (ca_file \(other)) and "wide" (ca_file \(store)) both apply to this host with different CA files; give them the same ca_file or make their hosts disjoint

                """, "\(result.stderr)")
    }

    @Test("A policy without ca_file defers to one that names it; equal CA files do not conflict")
    func storeDeference() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try FileManager.default.copyItem(atPath: pki.path("store"), toPath: directory.file("copy.pem"))
        try """
        policies:
          open: { mode: none, hosts: ["**.example.org"] }
          anchored: { mode: none, hosts: ["api.example.org"], ca_file: \(pki.path("store")) }
          same: { mode: none, hosts: ["*.example.org"], ca_file: copy.pem }
        endpoints:
          - { name: api, url: "https://api.example.org/" }
        """.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                """
                    effective: none, store \(pki.path("store")), profile auto: rfc5280 for an anchor from ca_file (webpki when \
                the system store vouches for it, or with no anchor); from open (hosts **.example.org), anchored (hosts \
                api.example.org), same (hosts *.example.org)
                """
            ), "\(result.stdout)")
    }
}
