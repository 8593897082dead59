import Foundation
import PinpathTestSupport
import Testing

/// etc/pinpath.service as systemd reads it: `systemd-analyze verify` accepts it and `security` rates it.
@Suite("The systemd unit")
struct ServiceUnitTests {
    static let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../etc/pinpath.service")
        .standardized.path

    @Test(
        "systemd-analyze verifies the unit (with the built binary in place of /usr/local/bin/pinpath)",
        .enabled(if: analyze != nil, "needs systemd-analyze (Debian: systemd)"))
    func verify() throws {
        let directory = "\(NSTemporaryDirectory())pinpath-unit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8).replacingOccurrences(
            of: "/usr/local/bin/pinpath", with: Shell.pinpath)
        #expect(text.contains("Type=notify") && text.contains("ExecReload=") && text.contains("CapabilityBoundingSet=\n"))
        #expect(text.contains("\nWatchdogSec=30s\n"))
        let copy = "\(directory)/pinpath.service"
        try text.write(toFile: copy, atomically: true, encoding: .utf8)
        let verified = try Shell.run([Self.analyze!, "verify", copy])
        #expect(verified.status == 0 && verified.stderr.isEmpty, "\(verified.stderr)")
        let security = try Shell.run([Self.analyze!, "security", "--offline=true", copy])
        let level = security.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") }
        print(level ?? security.stdout)
        let score = level.flatMap { line in line.split(separator: " ").compactMap { Double($0) }.first }
        #expect((score ?? 10) < 2.0, "exposure: \(level ?? "?")")
    }
}
