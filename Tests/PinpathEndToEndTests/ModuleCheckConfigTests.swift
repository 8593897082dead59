import Foundation
import PinpathTestSupport
import Testing

/// Issue 26, item 1: `pinpath check-config` validates `modules:` as it does endpoints, with positions, and
/// summarizes the modules that load.
@Suite("check-config: modules")
struct ModuleCheckConfigTests {
    @Test("A bad module is refused with each problem's position (exit 78); a good one is summarized with its kind and targets")
    func checkConfig() throws {
        let directory = try TemporaryDirectory("modules-check")
        try """
        modules:
          web: { kind: https, url: "https://x/", targets: [10.0.0.0/33] }

        """.write(toFile: directory.file("bad.yaml"), atomically: true, encoding: .utf8)
        let bad = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("bad.yaml")])
        #expect(bad.status == 78, "\(bad.stderr)")
        #expect(bad.stderr.contains("bad.yaml:2:23: modules.web.url: a module has no url"), "\(bad.stderr)")
        #expect(bad.stderr.contains(#"bad.yaml:2:52: modules.web.targets[0]: "10.0.0.0/33" is not an address range"#), "\(bad.stderr)")

        try """
        modules:
          web: { kind: https, targets: ["**.example.com", 10.0.0.0/8] }
          any: { timeout: 5s }

        """.write(toFile: directory.file("good.yaml"), atomically: true, encoding: .utf8)
        let good = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("good.yaml")])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("modules:   2\n  web: kind https, targets **.example.com 10.0.0.0/8\n"), "\(good.stdout)")
        #expect(good.stdout.contains("  any: kind from each target's scheme, any target but loopback, link-local and metadata addresses"))
    }

    @Test("--effective shows each module's kind, targets and keys with the built-in defaults, a credential redacted, as text and JSON")
    func effectiveValues() throws {
        let directory = try TemporaryDirectory("modules-effective")
        try """
        modules:
          web:
            kind: https
            timeout: 5s
            headers: { Authorization: "Bearer module-secret-token", X-Probe: visible }
            targets: ["**.example.com", 10.0.0.0/8]
          any: { headers: { X-Any: visible-too } }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let text = try Shell.run([Shell.pinpath, "check-config", "--effective", "--config", directory.file("pinpath.yaml")])
        #expect(text.status == 0, "\(text.stderr)")
        let web = try #require(text.stdout.range(of: "  module web:\n").map { String(text.stdout[$0.lowerBound...]) }, "\(text.stdout)")
        for line in [
            "    kind: https\n", #"    targets: ["**.example.com","10.0.0.0/8"]"#, "    timeout: 5s\n",
            // Built-in defaults: what a probe with this module uses without writing it.
            "    method: GET\n", "    follow_redirects: true\n", "    ip_family: any\n",
            #"    headers: {"Authorization":"[redacted]","X-Probe":"visible"}"#,
        ] {
            #expect(web.contains(line), "\(line): \(web)")
        }
        #expect(!web.contains("interval") && !web.contains("    url:"), "a module has no interval or url: \(web)")
        #expect(!text.stdout.contains("module-secret-token"), "\(text.stdout)")
        let any = try #require(text.stdout.range(of: "  module any:\n").map { String(text.stdout[$0.lowerBound...]) })
        #expect(any.contains("    kind: from the target's scheme\n    targets: null\n"), "\(any)")
        #expect(any.contains(#"    headers: {"X-Any":"visible-too"}"#), "a kind-less module shows the keys it writes: \(any)")
        #expect(!any.contains("    method:"), "and not those of one kind it does not write: \(any)")

        let json = try Shell.run([Shell.pinpath, "check-config", "--effective", "--json", "--config", directory.file("pinpath.yaml")])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(!json.stdout.contains("module-secret-token"), "\(json.stdout)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let modules = try #require(object["modules"] as? [[String: Any]])
        #expect(modules.map { $0["name"] as? String } == ["web", "any"])
        #expect(modules.map { $0["kind"] as? String } == ["https", nil])
        let effective = try #require(modules.first?["effective"] as? [String: Any])
        #expect(effective["kind"] as? String == "https")
        #expect(effective["targets"] as? [String] == ["**.example.com", "10.0.0.0/8"])
        #expect(effective["timeout"] as? String == "5s")
        #expect((effective["headers"] as? [String: String]) == ["Authorization": "[redacted]", "X-Probe": "visible"])

        let plain = try Shell.run([Shell.pinpath, "check-config", "--json", "--config", directory.file("pinpath.yaml")])
        let plainModules = try #require(
            (try JSONSerialization.jsonObject(with: Data(plain.stdout.utf8)) as? [String: Any])?["modules"] as? [[String: Any]])
        #expect(plainModules.allSatisfy { $0["effective"] == nil }, "without --effective, no values: \(plain.stdout)")
    }
}
