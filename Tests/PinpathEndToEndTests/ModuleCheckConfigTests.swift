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
}
