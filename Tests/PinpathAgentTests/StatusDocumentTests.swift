import Foundation
import NIOCore
import PinpathSupport
import Testing

@testable import PinpathAgent

/// The status document's rendering and its store, as pure logic: escaping, the rings, reloads. What a running
/// agent puts in it is StatusAPITests' (PinpathEndToEndTests).
@Suite("Status document rendering and store")
struct StatusDocumentTests {
    /// Every character JSON or a page must take care of: a quote, a backslash, controls, the JavaScript line
    /// separators, markup, an emoji and a combining mark after a quote.
    static let hostileName = "a\"b\\c\n\r\t\u{0}\u{1b}[31m\u{7f}\u{2028}\u{2029}</script><img src=x onerror=alert(1)>&amp;👷🏽\"\u{301}"

    static func store(_ yaml: String) throws -> (StatusStore, AgentConfiguration) {
        let configuration = try loadConfiguration(yaml)
        let store = StatusStore(configurationPath: "/etc/pinpath/pinpath.yaml")
        store.configure(configuration)
        return (store, configuration)
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("Hostile text is exact JSON data: no raw <, >, &, control byte or line separator in the bytes")
    func escaping() throws {
        // A name from a file holds no control (the YAML reader refuses them); a server's message may hold anything.
        let name = "</script><img src=x onerror=alert(1)>&amp;\"\\ 👷🏽"
        let (store, _) = try Self.store("endpoints:\n  - { name: \(JSONValue.string(name).encoded()), url: \"http://127.0.0.1:1/\" }\n")
        var result = ProbeResult(endpoint: name, outcome: .failure, started: Date())
        result.message = Self.hostileName
        store.probed(result)
        let bytes = StatusDocument.render(store.snapshot())
        #expect(!bytes.contains { $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "&") })
        #expect(!bytes.dropLast().contains { $0 < 0x20 })  // the final newline only
        #expect(!String(decoding: bytes, as: UTF8.self).unicodeScalars.contains { $0 == "\u{2028}" || $0 == "\u{2029}" })
        let endpoint = try #require((try Self.object(bytes)["endpoints"] as? [[String: Any]])?.first)
        #expect(endpoint["name"] as? String == name)
        #expect((endpoint["last_probe"] as? [String: Any])?["message"] as? String == Self.hostileName)
    }

    @Test("The durations keep the last 30 probes, oldest first; the events the last 50, oldest first")
    func rings() throws {
        let (store, configuration) = try Self.store("endpoints:\n  - { name: a, url: \"http://127.0.0.1:1/\" }\n")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0..<35 {
            var result = ProbeResult(endpoint: "a", outcome: index % 2 == 0 ? .success : .failure, started: start + Double(index))
            result.kind = .http
            store.probed(result)
        }
        let endpoint = try #require(store.snapshot().endpoints.first)
        #expect(endpoint.durations.count == 30)
        #expect(endpoint.durations.map(\.time) == (5..<35).map { EndpointStatus.format(start + Double($0)) })
        #expect(endpoint.lastProbe?.time == EndpointStatus.format(start + 34))

        let endpointConfiguration = try #require(configuration.endpoints.first)
        for index in 0..<60 {
            let transition = EndpointState.Transition(
                previous: index % 2 == 0 ? .up : .down, current: index % 2 == 0 ? .down : .up,
                cause: index % 2 == 0 ? .probeFailed : .probeSucceeded, consecutive: index)
            store.observe(AgentEvents.stateChanged(endpointConfiguration, transition, probe: nil, connectivity: nil))
        }
        // Not of interest: not kept.
        store.observe(AgentEvents.dropped(count: 1, reason: "queue_full", errorName: nil))
        let snapshot = store.snapshot()
        #expect(snapshot.events.count == 50)
        #expect(snapshot.events.allSatisfy { $0.event == "endpoint.state_changed" && $0.endpoint == "a" })
        #expect(snapshot.events.first?.summary == "up → down (probe_failed)")
        #expect(snapshot.events.last?.summary == "down → up (probe_succeeded)")
        #expect(snapshot.events.map(\.time) == snapshot.events.map(\.time).sorted())
        #expect(snapshot.endpoints.first?.state == .up && snapshot.endpoints.first?.cause == "probe_succeeded")
    }

    @Test("A summary is one line whatever the fields hold: controls and bidi scalars escaped")
    func summaryIsOneLine() throws {
        let configuration = try loadConfiguration("endpoints:\n  - { name: a, url: \"http://127.0.0.1:1/\" }\n")
        let endpoint = try #require(configuration.endpoints.first)
        var result = ProbeResult(endpoint: "a", outcome: .failure, started: Date())
        result.errorCategory = .connectFailed
        let event = AgentEvents.stateChanged(
            endpoint, EndpointState.Transition(previous: .unknown, current: .down, cause: .probeFailed, consecutive: 2),
            probe: result, connectivity: nil)
        #expect(StatusEvent(event, time: UTCTime.now())?.summary == "unknown → down (connect_failed)")
        let reachability = AgentEvent(
            EventCatalog.reachabilityChanged,
            [("status", "unreachable"), ("previous_status", "reachable"), ("interface", "eth0\n\u{202e}evil"), ("reason", "x\u{1b}[2J")],
            level: .warning)
        let summary = try #require(StatusEvent(reachability, time: UTCTime.now())?.summary)
        #expect(!summary.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{202e}" }, "\(summary)")
        #expect(summary.hasPrefix("path reachable → unreachable via eth0"))
    }

    @Test("A reload keeps unchanged endpoints' records, starts changed and new ones afresh, drops removed ones")
    func reload() throws {
        let before = "endpoints:\n  - { name: a, url: \"http://127.0.0.1:1/\" }\n  - { name: b, url: \"http://127.0.0.1:2/\" }\n"
        let (store, old) = try Self.store(before)
        for name in ["a", "b"] { store.probed(ProbeResult(endpoint: name, outcome: .success, started: Date())) }
        let after = try loadConfiguration(
            "endpoints:\n  - { name: c, url: \"http://127.0.0.1:3/\", interval: 2s }\n  - { name: b, url: \"http://127.0.0.1:2/x\" }\n")
        store.configure(after, change: ConfigurationChange(from: old, to: after))
        let snapshot = store.snapshot()
        #expect(snapshot.endpoints.map(\.configured.name) == ["c", "b"])
        #expect(snapshot.endpoints.allSatisfy { $0.lastProbe == nil && $0.durations.isEmpty })
        #expect(snapshot.endpoints.last?.configured.url == "http://127.0.0.1:2/x")
        #expect(snapshot.refreshMilliseconds == 5000)

        let unchanged = try loadConfiguration("endpoints:\n  - { name: b, url: \"http://127.0.0.1:2/x\" }\n")
        store.probed(ProbeResult(endpoint: "b", outcome: .success, started: Date()))
        store.configure(unchanged, change: ConfigurationChange(from: after, to: unchanged))
        #expect(store.snapshot().endpoints.map { $0.lastProbe?.outcome } == [.success])
    }

    @Test("refresh_ms is the shortest interval held to [5 s, 60 s]: 1 s, 30 s, 1 h and 30 d intervals")
    func refreshBounds() throws {
        for (interval, expected) in [("1s", 5000), ("30s", 30_000), ("1h", 60_000), ("30d", 60_000)] {
            let (store, _) = try Self.store(
                "endpoints:\n  - { name: a, url: \"http://127.0.0.1:1/\", interval: \(interval) }\n"
                    + "  - { name: b, url: \"http://127.0.0.1:2/\", interval: 30d }\n")
            let agent = try #require(try Self.object(StatusDocument.render(store.snapshot()))["agent"] as? [String: Any])
            #expect(agent["refresh_ms"] as? Int == expected, "interval \(interval)")
        }
    }

    @Test("The page holds whatever refresh_ms it reads to [5 s, 60 s] before giving it to setTimeout")
    func pageClampsRefresh() throws {
        let script = try #require(StatusPage.asset(at: "/status.js")).bytes
        let text = String(decoding: script, as: UTF8.self)
        #expect(text.contains("const MAXIMUM_REFRESH_MS = 60000;"))
        #expect(text.contains("Math.min(MAXIMUM_REFRESH_MS, Math.max(MINIMUM_REFRESH_MS, wanted))"))
        #expect(text.contains("setTimeout(refresh, refreshPeriod())"))
    }

    @Test("A budget of server text: names cut to what remains, lists cut whole items at a time with the count left out")
    func textBudget() {
        var budget = StatusTextBudget(10)
        #expect(budget.take("abcdef", limit: 4) == "abcd…")
        #expect(budget.remaining == 6)
        #expect(budget.take("<<<<<<<<", limit: 256) == "<<<<<<…")
        #expect(budget.remaining == 0)
        #expect(budget.take("x", limit: 256) == "…")
        #expect(budget.take("", limit: 256) == "")

        var list = StatusTextBudget(7)
        let (kept, omitted) = list.takeWhole(["ab", "cde", "fghij", "k"], limit: 4)
        #expect(kept == ["ab", "cde"] && omitted == 2)
        #expect(list.remaining == 2)
        #expect(StatusTextBudget.perEndpoint == 4096)
    }

    @Test("The listener renders the document at most once a second, less often when it is slow: the requests that follow share its bytes")
    func answersShared() {
        let cache = StatusAnswerCache()
        var renders = 0
        func render() -> ByteBuffer {
            renders += 1
            return ByteBuffer(string: "document \(renders)")
        }
        let start = ContinuousClock.now
        let first = cache.body(now: start, render: render)
        let again = cache.body(now: start + .milliseconds(999), render: render)
        #expect(renders == 1)
        #expect(again == first)
        let later = cache.body(now: start + .seconds(1), render: render)
        #expect(renders == 2)
        #expect(later.getString(at: 0, length: later.readableBytes) == "document 2")
        // A clock that went back (another thread's earlier instant) renders anew rather than serving the future's.
        _ = cache.body(now: start, render: render)
        #expect(renders == 3)
        // A slow rendering is shared for ten times what it took: 150 ms of rendering, 1.5 s of sharing.
        #expect(StatusAnswerCache.lifetime(renderingTime: .milliseconds(20)) == .seconds(1))
        #expect(StatusAnswerCache.lifetime(renderingTime: .milliseconds(1350)) == .milliseconds(13_500))
        let slow = StatusAnswerCache()
        let slowStart = ContinuousClock.now
        func slowRender() -> ByteBuffer {
            renders += 1
            usleep(150_000)
            return ByteBuffer(string: "document \(renders)")
        }
        _ = slow.body(now: slowStart, render: slowRender)
        _ = slow.body(now: slowStart + .milliseconds(1400), render: slowRender)
        #expect(renders == 4)
        _ = slow.body(now: slowStart + .seconds(5), render: slowRender)
        #expect(renders == 5)
    }
}
