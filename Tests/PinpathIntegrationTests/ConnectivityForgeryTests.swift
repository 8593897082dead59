import Foundation
import PinpathTestSupport
import Testing

/// Issue 25, item 3, on the kernel: whoever answers the connectivity check chooses its 302's Location, and the
/// verdict's reason quotes that Location's host, percent-decoded. Printed raw, a host of `%0d%1b[2K…` erased the
/// line and painted `connectivity: full` over the real verdict; OSC sequences, bidi overrides and a 100 KB host got
/// through too. The scene is ``ConnectivityNamespaceTests/Scene``, whose "internet" server answers with the
/// Location its mode file names.
@Suite("A portal's Location cannot forge the connectivity verdict", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct ConnectivityForgeryTests {
    /// A hostile Location, the host `pinpath status --json` must report (percent-decoded, cut when longer
    /// than a DNS name can be), and what the terminal must show of it instead (escaped).
    struct Attack: Sendable, CustomTestStringConvertible {
        let name: String
        let location: String
        let jsonHost: String
        let shownHost: String
        var testDescription: String { name }
    }

    static let longHost = String(repeating: "a", count: 100_000)

    static let attacks = [
        Attack(
            name: "CR, erase line, a forged verdict, LF",
            location: "http://%0d%1b%5b2Kconnectivity%3a%20full%20(answered%20204%20as%20expected)%0a/login",
            jsonHost: "\r\u{1B}[2Kconnectivity: full (answered 204 as expected)\n",
            shownHost: #"\x0d\x1b[2Kconnectivity: full (answered 204 as expected)\x0a"#),
        Attack(
            name: "OSC 52 (write the clipboard) and OSC 8 (a hidden link)",
            location: "http://%1b%5d52%3bc%3bZXZpbA%3d%3d%07%1b%5d8%3b%3bhttp%3a%2f%2fevil%1b%5cclick%1b%5d8%3b%3b%1b%5c/",
            jsonHost: "\u{1B}]52;c;ZXZpbA==\u{07}\u{1B}]8;;http://evil\u{1B}\\click\u{1B}]8;;\u{1B}\\",
            shownHost: #"\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil\x1b\click\x1b]8;;\x1b\"#),
        Attack(
            name: "a bidi override",
            location: "http://%e2%80%aelatrop.example/",
            jsonHost: "\u{202E}latrop.example",
            shownHost: #"\u{202e}latrop.example"#),
        Attack(
            name: "a 100 KB host",
            location: "http://\(longHost)/",
            jsonHost: String(repeating: "a", count: 253) + "… (a host of 100000 bytes)",
            shownHost: String(repeating: "a", count: 253) + "… (a host of 100000 bytes)"),
    ]

    @Test("pinpath status --connectivity: escaped and bounded as text, exact and bounded as JSON, still portal", arguments: attacks)
    func status(attack: Attack) throws {
        let scene = try ConnectivityNamespaceTests.Scene(mode: "location \(attack.location)")
        defer { scene.remove() }

        let text = try ConnectivityNamespaceTests().status(scene, ["--check"])
        #expect(text.status == 1, "a redirect is not full connectivity: \(text.stdout)")
        let controls = text.stdout.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
        #expect(controls.isEmpty, "raw controls reached the terminal: \(controls.map { $0.value })")
        #expect(!text.stdout.unicodeScalars.contains("\u{202E}"), "a raw bidi override reached the terminal")
        let verdicts = text.stdout.split(separator: "\n").filter { $0.hasPrefix("connectivity:") }
        #expect(verdicts.count == 1, "one verdict line, no forged one: \(verdicts)")
        let expected = "connectivity: portal (redirected (302) to \(attack.shownHost)) via \(ConnectivityNamespaceTests.checkURL)"
        #expect(verdicts.first.map(String.init) == expected, "\(verdicts.first?.prefix(600) ?? "")")
        #expect(text.stdout.utf8.count < 4096, "the text is bounded: \(text.stdout.utf8.count) bytes")

        let json = try ConnectivityNamespaceTests().status(scene, ["--json"])
        #expect(json.stdout.utf8.count < 4096, "the JSON is bounded: \(json.stdout.utf8.count) bytes")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let connectivity = try #require(object["connectivity"] as? [String: Any])
        #expect(connectivity["state"] as? String == "portal")
        let reason = try #require(connectivity["reason"] as? String)
        #expect(Array(reason.unicodeScalars) == Array("redirected (302) to \(attack.jsonHost)".unicodeScalars), "\(reason.prefix(600))")
    }

    @Test("pinpath run: a 100 KB Location host reaches connectivity.changed cut to a DNS name's length")
    func agentEvent() async throws {
        let scene = try ConnectivityNamespaceTests.Scene(mode: "location http://\(Self.longHost)/")
        defer { scene.remove() }
        let agent = try ConnectivityNamespaceTests.RunningAgent(scene, interval: "2s", timeout: "1s")
        let portal = try await agent.connectivity("portal")
        #expect(portal["reason"] as? String == "redirected (302) to " + String(repeating: "a", count: 253) + "… (a host of 100000 bytes)")
        try await agent.stop()
        let longest = (try String(contentsOfFile: agent.events.file, encoding: .utf8)).split(separator: "\n").map(\.utf8.count).max() ?? 0
        #expect(longest < 4096, "no event line carries the host whole: \(longest) bytes")
    }
}
