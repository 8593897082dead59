import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 31, item 7: an endpoint's `address:` connects its probes to an IP address while SNI, `Host` and the
/// policy keep the URL's name. `pinpath run --once` against a server on 127.0.0.2 whose certificate names
/// `service.test` (a name that resolves nowhere) and `localhost`, and one on 127.0.0.1 for a redirect.
@Suite("Endpoint address:", .serialized)
final class EndpointAddressTests {
    static let pki = NamesPKI.shared
    static let files: (root: String, leaf: String, key: String, otherLeaf: String) = {
        try! pki.root("address-root")
        try! pki.leaf(
            "address-leaf", issuer: "address-root", subject: "/CN=service.test",
            extensions: ["subjectAltName=DNS:service.test,DNS:localhost"])
        try! pki.root("address-other-root")
        try! pki.leaf(
            "address-other-leaf", issuer: "address-other-root", subject: "/CN=service.test", extensions: ["subjectAltName=DNS:service.test"]
        )
        return (pki.path("address-root"), pki.path("address-leaf"), pki.path("address-leaf", "key"), pki.path("address-other-leaf"))
    }()

    let directory: TemporaryDirectory
    let pinned: RecordingServer
    let other: RecordingServer

    init() throws {
        directory = try TemporaryDirectory()
        let certificate = (leaf: Self.files.leaf, key: Self.files.key, chain: [String]())
        pinned = try RecordingServer(address: "127.0.0.2", certificate: certificate, directory: directory.path)
        other = try RecordingServer(address: "127.0.0.1", certificate: certificate, directory: directory.path)
    }

    deinit {
        pinned.stop()
        other.stop()
    }

    static func pin(_ file: String) throws -> String {
        try #require(try Certificate.certificates(contentsOf: file).first).spkiPin.description
    }

    /// A configuration whose `service` policy pins `pin` for service.test and localhost, with the test root.
    func configuration(pin: String, endpoints: String) throws -> String {
        let file = directory.file("pinpath-\(UUID().uuidString).yaml")
        try """
        policies:
          service: { mode: public_key, pins: ["\(pin)"], require_backup_pin: false, ca_file: \(Self.files.root), hosts: [service.test, localhost] }
        endpoints:
        \(endpoints)

        """.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    func probes(_ file: String) throws -> (status: Int32, probes: [String: [String: Any]], stderr: String) {
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", file])
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        var probes: [String: [String: Any]] = [:]
        for event in events where event["event"] as? String == "probe.completed" {
            probes[event["endpoint"] as? String ?? ""] = event
        }
        return (result.status, probes, result.stderr)
    }

    @Test("Probes connect to the address with the name's SNI, Host and pins; a redirect to another host is not pinned")
    func probesConnectToTheAddress() throws {
        let target = "https://localhost:\(other.port)/landed"
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let file = try configuration(
            pin: try Self.pin(Self.files.leaf),
            endpoints: """
                  - { name: pinned, url: "https://service.test:\(pinned.port)/health", address: 127.0.0.2, timeout: 5s }
                  - { name: redirected, url: "https://service.test:\(pinned.port)/redirect?status=302&to=\(encoded)", address: "127.0.0.2", timeout: 5s }
                """)
        let run = try probes(file)
        #expect(run.status == 0, "\(run.stderr)")
        let direct = try #require(run.probes["pinned"], "\(run.probes)")
        #expect(direct["outcome"] as? String == "success", "\(direct)")
        #expect(direct["remote_address"] as? String == "127.0.0.2:\(pinned.port)")
        let health = try #require(pinned.requests.first { $0.path == "/health" })
        #expect(health.serverName == "service.test")
        #expect(health.header("Host") == "service.test:\(pinned.port)")
        let redirected = try #require(run.probes["redirected"])
        #expect(redirected["outcome"] as? String == "success", "\(redirected)")
        #expect(redirected["remote_address"] as? String == "127.0.0.1:\(other.port)", "the redirect's host resolved: \(redirected)")
        #expect(other.requests.map(\.path) == ["/landed"])

        // check-config shows where the probes connect.
        let summary = try Shell.run([Shell.pinpath, "check-config", "--config", file])
        #expect(summary.status == 0, "\(summary.stderr)")
        #expect(
            summary.stdout.contains(
                "pinned: GET https://service.test:\(pinned.port)/health every 1m, timeout 5s, expect 200-299, connects to 127.0.0.2"),
            "\(summary.stdout)")
        let effective = try Shell.run([Shell.pinpath, "check-config", "--effective", "--json", "--config", file])
        #expect(effective.stdout.contains(#""address":"127.0.0.2""#), "\(effective.stdout)")
    }

    @Test("A wrong pin for the name refuses the probe, with the address it connected to")
    func wrongPinRefuses() throws {
        let file = try configuration(
            pin: try Self.pin(Self.files.otherLeaf),
            endpoints: #"  - { name: pinned, url: "https://service.test:\#(pinned.port)/", address: 127.0.0.2, timeout: 5s }"#)
        let run = try probes(file)
        #expect(run.status != 0)
        let probe = try #require(run.probes["pinned"], "\(run.probes) \(run.stderr)")
        #expect(probe["outcome"] as? String == "failure")
        #expect(probe["error_category"] as? String == "policy_rejected", "\(probe)")
        #expect(probe["remote_address"] as? String == "127.0.0.2:\(pinned.port)", "\(probe)")
        #expect(pinned.requests.isEmpty)
    }

    @Test("The monitor watches the address, not the name, and its verdict on the address is the kernel's route")
    func monitorWatchesTheAddress() throws {
        let configuration = try loadConfiguration(
            """
            endpoints:
              - { name: pinned, url: "https://service.test/", address: "2001:db8::7" }
              - { name: named, url: "https://named.test/" }
            """)
        #expect(configuration.watchedTargets.map(\.description) == ["2001:db8::7", "named.test"])
        let pinned = try #require(configuration.endpoints.first)
        #expect(EndpointTracker.host(of: pinned) == "2001:db8::7")
        #expect(!EndpointTracker.hostVerdictMayOnlyRaise(pinned), "a numeric host keeps the gate's rule")
    }

    @Test("A bad address is refused at its line and column, and the file's other problems are still reported")
    func badAddress() throws {
        let endpoint = "endpoints:\n  - name: api\n    url: https://service.test/\n"
        let cases: [(String, String)] = [
            (
                endpoint + "    address: db.internal",
                #"test.yaml:4:14: endpoints[0].address: "db.internal" is not an IP address (such as 192.0.2.10 or 2001:db8::10); a host name would be resolved, not pinned: put the name in the URL and the address here"#
            ),
            (endpoint + "    address: [192.0.2.1]", "test.yaml:4:14: endpoints[0].address: expected an IP address, found a list"),
            (
                endpoint + "    address: 192.0.2.1\n    proxy: http://proxy.example:3128",
                "test.yaml:4:14: endpoints[0].address: the probe goes through the proxy http://proxy.example:3128, which connects to the URL's host itself, so the address cannot be honoured; set proxy: none on this endpoint, or remove address"
            ),
            (
                endpoint + "    address: \"::ffff:192.0.2.66\"",
                "test.yaml:4:14: endpoints[0].address: ::ffff:192.0.2.66 is an IPv4-mapped IPv6 address, which goes out over IPv4 while the reachability gate would judge IPv6 routes; write it as 192.0.2.66"
            ),
            (
                endpoint + "    address: 0.0.0.0",
                "test.yaml:4:14: endpoints[0].address: 0.0.0.0 is the unspecified address, which connects to this machine; write 127.0.0.1 or ::1 to reach a local server, or the server's own address"
            ),
            (
                endpoint + "    address: \"::\"",
                "test.yaml:4:14: endpoints[0].address: :: is the unspecified address, which connects to this machine; write 127.0.0.1 or ::1 to reach a local server, or the server's own address"
            ),
            (
                "defaults:\n  address: 192.0.2.1\n" + endpoint,
                "test.yaml:2:3: defaults.address: address identifies one endpoint; it cannot have a default"
            ),
        ]
        for (yaml, expected) in cases {
            let problems = configurationProblems(yaml + "\n  - { name: second, url: \"https://b.example/\", interval: 0s }\n")
            #expect(problems.first == expected, "\(problems)")
            #expect(problems.contains { $0.contains("endpoints[1].interval: 0s is too short") }, "nothing else lost: \(problems)")
        }
        #expect(configurationProblems(endpoint + "    address: \"[2001:db8::1]\"").isEmpty)
        #expect(try loadConfiguration(endpoint + "    address: 2001:db8::1").endpoints.first?.address?.description == "2001:db8::1")
    }
}
