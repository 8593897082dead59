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
        let scratch = try TemporaryDirectory("unit")
        let directory = scratch.path
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
    static let nodeExporter = ["/usr/bin/prometheus-node-exporter", "/usr/bin/node_exporter"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    @Test(
        "The agent as the unit runs it (its own uid, no capabilities, no new privileges, its UMask, / read-only but its directories) writes a textfile another user can read, and an events file that user cannot",
        .enabled(if: getuid() == 0, "setting another uid and mounting need root"),
        .enabled(if: hardeningTools, "needs setpriv and unshare (Debian: util-linux)"))
    func hardenedRun() throws {
        let run = try HardenedRun()
        let metrics = try Shell.run(HardenedRun.asReader + ["/bin/cat", run.textfile])
        #expect(metrics.status == 0, "another user cannot read \(run.textfile): \(metrics.stderr)")
        #expect(metrics.stdout.contains("endpoint=\"local\""), "\(metrics.stdout)")
        let owner = try FileManager.default.attributesOfItem(atPath: run.textfile)
        #expect(owner[.ownerAccountID] as? Int == HardenedRun.agent)

        // The UMask still keeps the events private: the agent's own file, not readable by the other user.
        let lines = try String(contentsOfFile: run.eventsFile, encoding: .utf8)
        #expect(lines.contains("\"event\":\"probe.completed\"") && lines.contains("\"outcome\":\"success\""), "\(lines)")
        let hidden = try Shell.run(HardenedRun.asReader + ["/bin/cat", run.eventsFile])
        #expect(hidden.status != 0, "the events file is readable by another user")
    }

    @Test(
        "node_exporter, as another user, serves the textfile through the link the unit's install lines make; when the runtime directory goes (the agent stopped), the metrics go and node_textfile_scrape_error is 1",
        .enabled(if: getuid() == 0, "setting another uid and mounting need root"),
        .enabled(if: hardeningTools, "needs setpriv and unshare (Debian: util-linux)"),
        .enabled(if: nodeExporter != nil, "needs node_exporter (Debian: prometheus-node-exporter)"))
    func nodeExporterReadsTheLink() throws {
        let run = try HardenedRun()
        // node_exporter's textfile directory, with the link `ln -sf /run/pinpath/pinpath.prom …` makes (here
        // to the stand-in for /run).
        let collected = run.scene.file("node-exporter")
        try FileManager.default.createDirectory(atPath: collected, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(collected)/pinpath.prom", withDestinationPath: run.textfile)
        let port = try TLSServer.freePort()
        let log = open(run.scene.file("node-exporter.log"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(log) }
        let exporter = try Shell.spawn(
            HardenedRun.asReader + [
                Self.nodeExporter!, "--web.listen-address=127.0.0.1:\(port)", "--collector.disable-defaults",
                "--collector.textfile", "--collector.textfile.directory=\(collected)",
            ], stdout: log, stderr: log)
        defer { Shell.kill(exporter) }

        let served = try Self.scrape(port: port)
        #expect(served.contains("node_textfile_scrape_error 0"), "\(served)")
        let samples = served.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("endpoint=\"local\"") }
        #expect(!samples.isEmpty, "\(served)")

        try FileManager.default.removeItem(atPath: (run.textfile as NSString).deletingLastPathComponent)
        let stopped = try Self.scrape(port: port)
        #expect(stopped.contains("node_textfile_scrape_error 1"), "\(stopped)")
        #expect(!stopped.contains("endpoint=\"local\""), "\(stopped)")
    }

    /// GET /metrics from a server on 127.0.0.1 (HTTP/1.0: the server closes after the answer), waiting up to
    /// 10 s for it to listen.
    static func scrape(port: UInt16) throws -> String {
        var descriptor: Int32 = -1
        for _ in 0..<1000 {
            if let connected = try? TLSServer.connectLoopback(port: port) {
                descriptor = connected
                break
            }
            usleep(10_000)
        }
        guard descriptor >= 0 else { throw ShellError(description: "nothing listens on 127.0.0.1:\(port)") }
        defer { close(descriptor) }
        let request = Array("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard write(descriptor, request, request.count) == request.count else { throw ShellError(description: "write: \(errno)") }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else { break }
            response += buffer[..<count]
        }
        return String(decoding: response, as: UTF8.self)
    }
}

/// The agent run as etc/pinpath.service would run it, with what can run here: in a mount namespace of its own,
/// empty stand-ins over /run and /var/log hold the directories systemd would make for the unit, and / is
/// read-only (ProtectSystem=strict); the agent runs under setpriv as a uid of its own with no groups, no
/// capabilities in any set and no_new_privs (DynamicUser, CapabilityBoundingSet=, NoNewPrivileges=), with the
/// unit's UMask and a clean environment: `check-config` (ExecStartPre), then `run --once` against
/// openssl s_server on loopback, with the textfile and events paths etc/pinpath.yaml documents.
struct HardenedRun {
    /// Numeric ids with no passwd entry, as DynamicUser allocates them (61184-65519): the agent, and a reader
    /// standing for node_exporter.
    static let agent = 61_999
    static let reader = 62_000
    /// Runs what follows as the reader: another unprivileged user.
    static let asReader = ["/usr/bin/setpriv", "--reuid=\(reader)", "--regid=\(reader)", "--clear-groups"]

    let scene: TemporaryDirectory
    /// Where the agent wrote the metrics textfile and the events, seen from outside its namespace.
    let textfile: String
    let eventsFile: String

    init() throws {
        let settings = try ServiceUnitTests.serviceSettings()
        let umask = try #require(settings["UMask"]?.last, "the unit sets no UMask")
        #expect(settings["NoNewPrivileges"] == ["yes"] && settings["CapabilityBoundingSet"] == [""])
        let textfile = try #require(try ServiceUnitTests.documentedPath("textfile"))
        let events = try #require(try ServiceUnitTests.documentedPath("output"))
        let runtime = try #require(settings["RuntimeDirectory"]?.first)
        let logs = try #require(settings["LogsDirectory"]?.first)
        #expect(textfile.hasPrefix("/run/\(runtime)/") && events.hasPrefix("/var/log/\(logs)/"), "\(textfile) \(events)")

        scene = try TemporaryDirectory()
        for directory in ["run/\(runtime)", "log/\(logs)", "bin", "etc"] {
            try FileManager.default.createDirectory(atPath: scene.file(directory), withIntermediateDirectories: true)
        }
        try Shell.check(["/bin/chmod", "755", scene.path])
        try Shell.check(["/bin/chown", "\(Self.agent):\(Self.agent)", scene.file("run/\(runtime)"), scene.file("log/\(logs)")])
        try Shell.check(["/bin/chmod", settings["RuntimeDirectoryMode"]?.last ?? "0755", scene.file("run/\(runtime)")])
        // The binary where the unit's install line puts it would be, readable by any user.
        try Shell.check(["/usr/bin/install", "-m", "755", Shell.pinpath, scene.file("bin/pinpath")])
        try Shell.check(["/usr/bin/install", "-m", "644", TestPKI.shared.path("root"), scene.file("etc/root.pem")])
        self.textfile = scene.file("run" + textfile.dropFirst("/run".count))
        eventsFile = scene.file("log" + events.dropFirst("/var/log".count))

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
            "/usr/bin/env", "SCENE=\(scene.path)", "AGENT=\(Self.agent)", "UMASK=\(umask)",
            "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/bash", "-c", script,
        ])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    }
}
