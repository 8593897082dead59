import Foundation
import PinpathTestSupport
import Testing

/// etc/pinpath.service as systemd reads it: `systemd-analyze verify` accepts it and `security` rates it; the
/// paths it and etc/pinpath.yaml document are ones it can write; and the agent, run with the unit's user,
/// capabilities, UMask and read-only file system, writes a metrics file that another user can read.
@Suite("The systemd unit")
struct ServiceUnitTests {
    static let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../etc/pinpath.service")
        .standardized.path
    static let exampleConfiguration = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../etc/pinpath.yaml").standardized.path

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

    /// The unit's `[Service]` settings, each key with its values in order (a key may repeat).
    static func serviceSettings() throws -> [String: [String]] {
        var settings: [String: [String]] = [:]
        var inService = false
        for line in try String(contentsOfFile: unit, encoding: .utf8).split(separator: "\n") {
            if line.hasPrefix("[") { inService = line == "[Service]" }
            guard inService, !line.hasPrefix("#"), let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
        }
        return settings
    }

    /// The directories systemd makes writable for the unit under `ProtectSystem=strict`.
    static func writableDirectories(_ settings: [String: [String]]) -> [String] {
        let made = [("StateDirectory", "/var/lib"), ("LogsDirectory", "/var/log"), ("RuntimeDirectory", "/run")]
        let directories: [String] = made.flatMap { key, base in
            (settings[key] ?? []).flatMap { $0.split(separator: " ").map { "\(base)/\($0)" } }
        }
        let named: [String] = (settings["ReadWritePaths"] ?? []).flatMap { $0.split(separator: " ") }.map {
            String($0.trimmingPrefix("-"))
        }
        return directories + named
    }

    /// The path after `key:` in etc/pinpath.yaml's comments ("#   textfile: /run/…"), the documented place.
    static func documentedPath(_ key: String) throws -> String? {
        for line in try String(contentsOfFile: exampleConfiguration, encoding: .utf8).split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "#" })
            if words.count >= 2, words[0] == "\(key):", words[1].hasPrefix("/") { return String(words[1]) }
        }
        return nil
    }

    @Test("The paths etc/pinpath.yaml and the unit document for the metrics textfile and the events file are writable by the unit")
    func documentedPathsAreWritable() throws {
        let settings = try Self.serviceSettings()
        #expect(settings["ProtectSystem"] == ["strict"] && settings["DynamicUser"] == ["yes"])
        let writable = Self.writableDirectories(settings)
        let textfile = try #require(try Self.documentedPath("textfile"), "etc/pinpath.yaml documents no metrics.textfile path")
        let events = try #require(try Self.documentedPath("output"), "etc/pinpath.yaml documents no events.output file")
        for path in [textfile, events] {
            let directory = String(path[..<path.lastIndex(of: "/")!])
            #expect(writable.contains(directory), "\(path) is not in a directory the unit can write: \(writable)")
        }
        // DynamicUser hides StateDirectory and LogsDirectory behind mode-700 directories: node_exporter must
        // find the textfile in the runtime directory, which the unit leaves traversable.
        #expect(textfile.hasPrefix("/run/"), "\(textfile)")
        #expect((settings["RuntimeDirectoryMode"] ?? ["0755"]) == ["0755"])
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        #expect(text.contains("ln -sf \(textfile) /var/lib/prometheus/node-exporter/"), "the unit's install lines link another file")
    }

    static let hardeningTools = ["/usr/bin/setpriv", "/usr/bin/unshare"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(
        "The agent as the unit runs it (its own uid, no capabilities, no new privileges, its UMask, / read-only but its directories) writes a textfile another user can read, and an events file that user cannot",
        .enabled(if: getuid() == 0, "setting another uid and mounting need root"),
        .enabled(if: hardeningTools, "needs setpriv and unshare (Debian: util-linux)"))
    func hardenedRun() throws {
        let settings = try Self.serviceSettings()
        let umask = try #require(settings["UMask"]?.last, "the unit sets no UMask")
        #expect(settings["NoNewPrivileges"] == ["yes"] && settings["CapabilityBoundingSet"] == [""])
        let textfile = try #require(try Self.documentedPath("textfile"))
        let events = try #require(try Self.documentedPath("output"))
        let runtime = try #require(settings["RuntimeDirectory"]?.first)
        let logs = try #require(settings["LogsDirectory"]?.first)
        #expect(textfile.hasPrefix("/run/\(runtime)/") && events.hasPrefix("/var/log/\(logs)/"), "\(textfile) \(events)")

        // Numeric ids with no passwd entry, as DynamicUser allocates them (61184-65519): the agent, and a
        // reader standing for node_exporter.
        let agent = 61_999
        let reader = 62_000
        let scene = try TemporaryDirectory()
        // Empty stand-ins for /run and /var/log, holding the directories systemd would make for the unit.
        for directory in ["run/\(runtime)", "log/\(logs)", "bin", "etc"] {
            try FileManager.default.createDirectory(atPath: scene.file(directory), withIntermediateDirectories: true)
        }
        try Shell.check(["/bin/chmod", "755", scene.path])
        try Shell.check(["/bin/chown", "\(agent):\(agent)", scene.file("run/\(runtime)"), scene.file("log/\(logs)")])
        try Shell.check(["/bin/chmod", settings["RuntimeDirectoryMode"]?.last ?? "0755", scene.file("run/\(runtime)")])
        // The binary where the unit's install line puts it would be, readable by any user.
        try Shell.check(["/usr/bin/install", "-m", "755", Shell.pinpath, scene.file("bin/pinpath")])
        try Shell.check(["/usr/bin/install", "-m", "644", TestPKI.shared.path("root"), scene.file("etc/root.pem")])

        let localhost = LocalhostPKI.shared
        let server = try TLSServer(
            certificate: localhost.path("valid"), key: localhost.path("valid", "key"), chain: [TestPKI.shared.path("inter")],
            in: scene.path)
        defer { server.stop() }
        let configuration = scene.file("etc/pinpath.yaml")
        try """
        events: { output: \(events), probes: all }
        policies:
          test-root: { mode: none, ca_file: \(scene.file("etc/root.pem")), hosts: ["localhost"] }
        endpoints:
          - { name: local, url: "https://localhost:\(server.port)/", timeout: 5s }
        metrics: { textfile: \(textfile) }

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        try Shell.check(["/bin/chmod", "644", configuration])

        // In a mount namespace of its own: the stand-ins over /run and /var/log, then / read-only
        // (ProtectSystem=strict); then the unit's user, capabilities and UMask, and a clean environment.
        let script = #"""
            set -eu
            mount --bind "$SCENE/run" /run
            mount --bind "$SCENE/log" /var/log
            mount -o remount,bind,ro /
            as_agent() {
              setpriv --reuid="$AGENT" --regid="$AGENT" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \
                env -i PATH=/usr/bin:/bin HOME=/ LANG=C.UTF-8 /bin/sh -c 'umask "$0"; exec "$@"' "$UMASK" "$@"
            }
            as_agent "$SCENE/bin/pinpath" check-config --config "$SCENE/etc/pinpath.yaml" >/dev/null
            as_agent "$SCENE/bin/pinpath" run --once --config "$SCENE/etc/pinpath.yaml"
            """#
        let run = try Shell.run([
            "/usr/bin/env", "SCENE=\(scene.path)", "AGENT=\(agent)", "UMASK=\(umask)",
            "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/bash", "-c", script,
        ])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")

        let written = scene.file("run/\(runtime)/" + textfile.split(separator: "/").last!)
        let metrics = try Shell.run([
            "/usr/bin/setpriv", "--reuid=\(reader)", "--regid=\(reader)", "--clear-groups", "/bin/cat", written,
        ])
        #expect(metrics.status == 0, "another user cannot read \(written): \(metrics.stderr)")
        #expect(metrics.stdout.contains("endpoint=\"local\""), "\(metrics.stdout)")
        let owner = try FileManager.default.attributesOfItem(atPath: written)
        #expect(owner[.ownerAccountID] as? Int == agent)

        // The UMask still keeps the events private: the agent's own file, not readable by the other user.
        let eventsFile = scene.file("log/\(logs)/" + events.split(separator: "/").last!)
        let lines = try String(contentsOfFile: eventsFile, encoding: .utf8)
        #expect(lines.contains("\"event\":\"probe.completed\"") && lines.contains("\"outcome\":\"success\""), "\(lines)")
        let hidden = try Shell.run(["/usr/bin/setpriv", "--reuid=\(reader)", "--regid=\(reader)", "--clear-groups", "/bin/cat", eventsFile])
        #expect(hidden.status != 0, "the events file is readable by another user")
    }
}
