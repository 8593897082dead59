import Foundation
import PinpathTestSupport
import Testing

/// Issue 25, item 3: one endpoint name must not break the exposition. Label values were escaped per Swift
/// `Character`, and `"` followed by a combining mark (U+0301) is one `Character` that is not `"`: the quote went
/// out unescaped, and Prometheus refused the whole text, every endpoint's metrics and alerts with it. Names come
/// from the main file and from included files, which `check-config` accepts.
@Suite(
    "Hostile endpoint names in /metrics and the textfile", .serialized,
    .enabled(if: ExpositionReaders.isAvailable, Comment(rawValue: ExpositionReaders.unavailableReason)))
struct MetricsLabelEscapingTests {
    /// Names the main file gives: quotes and backslashes a combining mark merges with, an ideographic space
    /// (a space, not a control nor invisible: allowed, and it must come back as it is), a flag (two scalars, one
    /// `Character`), plain escapes.
    static let mainNames = [
        "quote\"\u{301}", "backslash\\\u{301}", "both\\\"\u{301}\u{302}", "ideographic\u{3000}space", "plain \"quoted\" \\ back",
        "é\"🇫🇷\"", "trailing\\",
    ]
    /// Names an included file gives.
    static let includedNames = ["included\"\u{301}", "included \\\u{301}\"\u{301}"]

    /// `text` as a YAML double-quoted scalar: `\"` and `\\`, every scalar outside printable ASCII as `\u`/`\U`.
    static func yamlQuoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case " "..."~": quoted.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16)
                quoted +=
                    scalar.value > 0xFFFF
                    ? "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
                    : "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return quoted + "\""
    }

    /// Exactly, scalar by scalar: String equality would take `e` + U+0301 for `é`.
    static func scalars(_ texts: [String]) -> [[Unicode.Scalar]] { texts.map { Array($0.unicodeScalars) } }

    static func endpoints(_ names: [String], port: UInt16) -> String {
        names.map { "  - { name: \(yamlQuoted($0)), url: \"http://127.0.0.1:\(port)/\", interval: 1s, timeout: 1s }\n" }.joined()
    }

    @Test("pinpath run: /metrics (both formats) and the textfile pass promtool and prometheus_client, every name read back exactly")
    func hostileNamesRoundTrip() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        let closed = try TLSServer.freePort()  // nothing listens: every probe fails at once, and is still a sample
        let listen = "127.0.0.1:\(try TLSServer.freePort())"
        try """
        events: { output: \(directory.file("events.jsonl")) }
        metrics: { listen: "\(listen)", textfile: \(directory.file("pinpath.prom")) }
        include: conf.d/*.yaml
        endpoints:
        \(Self.endpoints(Self.mainNames, port: closed))
        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        try "endpoints:\n\(Self.endpoints(Self.includedNames, port: closed))".write(
            toFile: directory.file("conf.d/more.yaml"), atomically: true, encoding: .utf8)
        let allNames = Self.mainNames + Self.includedNames

        let check = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        #expect(check.status == 0, "check-config accepts every name: \(check.stderr)")

        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }
        // Every endpoint has a first result in both (the textfile is rewritten every 5 s at most).
        let samples = { (text: String) in text.split(separator: "\n").filter { $0.hasPrefix("probe_success{") }.count }
        try await MetricsEndpointTests.wait("a result for every endpoint") {
            samples(try MetricsEndpointTests.fetch(listen, "/metrics")?.body ?? "") == allNames.count
                && samples(directory.read("pinpath.prom") ?? "") == allNames.count
        }
        let scraped = try #require(try MetricsEndpointTests.fetch(listen, "/metrics")).body
        let openMetrics = try #require(
            try MetricsEndpointTests.fetch(listen, "/metrics", ["-H", "Accept: application/openmetrics-text; version=1.0.0"]))
        #expect(openMetrics.headers["content-type"]?.hasPrefix("application/openmetrics-text") == true)
        let textfile = try #require(directory.read("pinpath.prom"))

        for (source, text) in [("/metrics", scraped), ("textfile", textfile)] {
            let promtool = try ExpositionReaders.promtoolCheck(text)
            #expect(promtool.status == 0, "promtool refuses the \(source): \(promtool.stderr)")
            let names = try ExpositionReaders.labelValues("endpoint", in: text)
            #expect(Self.scalars(names) == Self.scalars(allNames), "prometheus_client reads the \(source)'s names back: \(names)")
        }
        let names = try ExpositionReaders.labelValues("endpoint", in: openMetrics.body, openMetrics: true)
        #expect(Self.scalars(names) == Self.scalars(allNames), "prometheus_client's OpenMetrics parser reads the names back: \(names)")

        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(6)) == 0)
    }

    /// What a YAML double-quoted name can smuggle, and where: controls through escapes (`\n`, NEL, CR, ESC),
    /// a bidi override, a lone surrogate (libyaml refuses the escape), in the main file and in an included one.
    @Test(
        "check-config refuses a name with a control or bidi formatting character, from the main file or an included one",
        arguments: [
            (#""a\nb""#, #"\x0a"#), (#""a\u0085b""#, #"\x85"#), (#""a\rb""#, #"\x0d"#), (#""a\eb""#, #"\x1b"#),
            (#""a\u202Eb""#, #"\u{202e}"#), (#""a\u2066b""#, #"\u{2066}"#), (#""a\uD800b""#, "invalid Unicode character escape code"),
        ] as [(String, String)])
    func refusedNames(yaml: String, shown: String) throws {
        let directory = try TemporaryDirectory()
        for included in [false, true] {
            let endpoint = "endpoints:\n  - { name: \(yaml), url: \"http://127.0.0.1:9/\" }\n"
            if included {
                try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
                try endpoint.write(toFile: directory.file("conf.d/bad.yaml"), atomically: true, encoding: .utf8)
                try "include: conf.d/*.yaml\n".write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            } else {
                try endpoint.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            }
            let result = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
            #expect(result.status == 78, "\(yaml) (included: \(included)): \(result.stdout)")
            #expect(result.stderr.contains(shown), "\(yaml) (included: \(included)) is named: \(result.stderr)")
            #expect(!result.stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" || $0 == "\u{85}" || $0 == "\r" })
        }
    }

    /// Bytes YAML escapes cannot make: invalid UTF-8, and a surrogate encoded as UTF-8 (CESU-8's way), put
    /// raw into an included file's name. No String holding them can exist: the file is refused whole.
    @Test(
        "An included file whose name holds invalid UTF-8 or an encoded surrogate is refused as not UTF-8",
        arguments: [
            [0xFF] as [UInt8], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xA2],
        ])
    func invalidUTF8(bytes: [UInt8]) throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        let endpoint = Array("endpoints:\n  - { name: \"a".utf8) + bytes + Array("b\", url: \"http://127.0.0.1:9/\" }\n".utf8)
        try Data(endpoint).write(to: URL(fileURLWithPath: directory.file("conf.d/bad.yaml")))
        try "include: conf.d/*.yaml\n".write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
        #expect(result.status == 78, "\(bytes): \(result.stdout)")
        #expect(result.stderr.contains("bad.yaml") && result.stderr.contains("not UTF-8"), "\(bytes): \(result.stderr)")
    }
}
