import Foundation
import PinpathTestSupport
import Testing

/// A configured pattern runs on bytes a server chooses. With Swift's Regex (no step limit, no way to stop
/// a match), `^(a|aa)+$` against sixty `a` and a `!` never ended: the pool's threads were held, no endpoint
/// got another event, and SIGTERM was ignored. Each search is now bounded (PCRE2's limits and a step count
/// over the whole search): a pattern that cannot decide fails its probe, and the agent goes on.
@Suite("Patterns run on a server's bytes are bounded", .serialized)
struct PatternLimitAttackTests {
    /// The agent's events so far, parsed.
    static func events(_ directory: TemporaryDirectory) -> [[String: Any]] {
        directory.lines("events.jsonl").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func probes(_ events: [[String: Any]], of endpoint: String) -> [[String: Any]] {
        events.filter { $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String == endpoint }
    }

    static func state(_ events: [[String: Any]], of endpoint: String) -> String? {
        events.last { $0["event"] as? String == "endpoint.state_changed" && $0["endpoint"] as? String == endpoint }?["state"] as? String
    }

    @Test(
        "Attack: backtracking patterns on crafted bodies fail their probes with the limit, a healthy endpoint's fall is reported on time, SIGTERM stops the agent",
        .timeLimit(.minutes(2)))
    func craftedBodies() async throws {
        let directory = try TemporaryDirectory()
        // Exponential: every way to split sixty a's into a and aa is tried before the ! refuses them all.
        let sixtyAs = String(repeating: "a", count: 60) + "!"
        let exponential = try HostileServer(.craftedBody(sixtyAs, headers: ["X-Token: \(sixtyAs)"]))
        // Quadratic: each <title> starts a .* that runs to the end of 3.2 MB and back. PCRE2's own match limit
        // counts per start position, so it alone would let this search run for hours.
        let quadratic = try HostileServer(.craftedBody(String(repeating: "<title>x", count: 400_000)))
        let healthy = try HostileServer(.craftedBody("ok"))
        defer {
            exponential.stop()
            quadratic.stop()
            healthy.stop()
        }
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        include: conf.d/*.yaml
        endpoints:
          - { name: healthy, url: "http://127.0.0.1:\(healthy.port)/", interval: 1s, timeout: 1s, expect: { body_contains: ok } }
          - { name: titled, url: "http://127.0.0.1:\(quadratic.port)/", interval: 2s, expect: { body_matches: "(?s)<title>.*</title>" } }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        // The attacker's included file: two endpoints, so that both of the pool's threads are held, and the
        // same pattern on a header value.
        try """
        endpoints:
          - { name: team-a, url: "http://127.0.0.1:\(exponential.port)/", interval: 2s, expect: { body_matches: "^(a|aa)+$" } }
          - { name: team-b, url: "http://127.0.0.1:\(exponential.port)/b", interval: 2s, expect: { body_matches: "^(a|aa)+$" } }
          - { name: team-h, url: "http://127.0.0.1:\(exponential.port)/h", interval: 2s, expect: { headers: { X-Token: "/^(a|aa)+$/" } } }

        """.write(toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)

        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }

        let hostile = ["team-a", "team-b", "team-h", "titled"]
        // Two failed probes of searches of up to 50,000,000 steps each: a bound on a hang, with room for a machine
        // whose cores other work shares (it ran out at 20 s under a load average of 14).
        let allDown = "every hostile endpoint down on a pattern_limit probe, the healthy one up"
        try await MetricsEndpointTests.wait(allDown, timeout: .seconds(60)) {
            let events = Self.events(directory)
            return Self.state(events, of: "healthy") == "up"
                && hostile.allSatisfy { name in
                    Self.state(events, of: name) == "down"
                        && Self.probes(events, of: name).contains { $0["error_category"] as? String == "pattern_limit" }
                }
        }
        let events = Self.events(directory)
        for name in hostile {
            let probe = try #require(Self.probes(events, of: name).first { $0["error_category"] as? String == "pattern_limit" })
            #expect(probe["outcome"] as? String == "failure")
            // Under a sanitizer each step is slower, and the processor-time backstop may come first.
            let limit = SanitizerRun.name == nil ? "needed more than 50,000,000 steps" : ""
            let key = name == "team-h" ? "expect.headers.X-Token" : "body_matches"
            #expect(
                (probe["message"] as? String)?.hasPrefix("the \(key) pattern \(limit)") == true
                    && (probe["message"] as? String)?.contains(" on this response; ") == true, "\(probe)")
        }

        // The server of the healthy endpoint goes away: two failed probes (1 s apart) make it down, which must
        // come while the hostile endpoints keep failing beside it.
        healthy.stop()
        try await MetricsEndpointTests.wait("the healthy endpoint's down", timeout: .seconds(10)) {
            Self.state(Self.events(directory), of: "healthy") == "down"
        }
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(10)) == 0)
        #expect(Self.events(directory).last?["event"] as? String == "agent.stopping")
    }

    /// Found by the round-3 review: each search was bounded, but ran on the cooperative pool, so 200 included
    /// endpoints with a backtracking pattern (about 0.45 s each) held both of its threads: the main file's
    /// endpoint was probed once in 166 s and SIGTERM was honoured 128 s late. Searches now run in lanes of their
    /// own, the included files' apart from the main file's. Round 4 (review): 256 or more probes parked in the
    /// included lane held every place among the probes in flight, and the main file's endpoints waited again; a
    /// lane now holds at most 16 waiting searches, and one that cannot wait or start within its probe's timeout
    /// fails its probe.
    @Test(
        "Attack: 300 included endpoints with backtracking patterns delay neither the main file's probes, with or without patterns, nor SIGTERM",
        .timeLimit(.minutes(2)))
    func manyHostileEndpoints() async throws {
        let directory = try TemporaryDirectory()
        let exponential = try HostileServer(.craftedBody(String(repeating: "a", count: 60) + "!"))
        let healthy = try HostileServer(.craftedBody("ok"))
        defer {
            exponential.stop()
            healthy.stop()
        }
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        include: conf.d/*.yaml
        endpoints:
          - { name: main-api, url: "http://127.0.0.1:\(healthy.port)/", interval: 1s, timeout: 1s }
          - { name: main-pattern, url: "http://127.0.0.1:\(healthy.port)/p", interval: 1s, timeout: 1s, expect: { body_matches: "^ok$" } }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let team = (0..<300).map { index in
            "  - { name: team-\(index), url: \"http://127.0.0.1:\(exponential.port)/\(index)\", interval: 2s, timeout: 2s, "
                + "expect: { body_matches: \"^(a|aa)+$\" } }\n"
        }
        try ("endpoints:\n" + team.joined()).write(toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)

        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }
        try await MetricsEndpointTests.wait("the included endpoints failing on pattern_limit", timeout: .seconds(30)) {
            Self.events(directory).contains {
                ($0["endpoint"] as? String)?.hasPrefix("team-") == true && $0["error_category"] as? String == "pattern_limit"
            }
        }
        // The included lane is busy from here on (300 endpoints, 0.45 s per search); the main file's endpoints go on.
        let before = Self.events(directory)
        try await Task.sleep(for: .seconds(12))
        let after = Self.events(directory)
        let counts = ["main-api", "main-pattern"].map { name in Self.probes(after, of: name).count - Self.probes(before, of: name).count }
        print("in 12 s beside 300 backtracking included endpoints: main-api probed \(counts[0]) times, main-pattern \(counts[1])")
        // The included endpoints fail, whether their search ran to its limit or could not wait for the lane.
        let unsearched = after.filter { ($0["message"] as? String)?.hasPrefix("the patterns were not searched: ") == true }
        #expect(!unsearched.isEmpty && unsearched.allSatisfy { $0["error_category"] as? String == "pattern_limit" })
        #expect(counts[0] >= 6 && counts[1] >= 6, "main-api \(counts[0]), main-pattern \(counts[1]) probes in 12 s at a 1 s interval")
        #expect(Self.probes(after, of: "main-pattern").last?["outcome"] as? String == "success")
        let stopping = ContinuousClock.now
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(10)) == 0)
        print("SIGTERM to exit: \(ContinuousClock.now - stopping)")
        #expect(Self.events(directory).last?["event"] as? String == "agent.stopping")
    }

    /// Round 5 (review): a search that had to wait past its probe's timeout was refused, so a server behind two
    /// main-file endpoints with slow patterns could fail a third, healthy endpoint at will (12 failures in 20 s).
    /// A search that waits is now run however long it waited: another endpoint's cost delays a verdict, never
    /// turns it into a failure.
    @Test(
        "Attack: slow searches of other endpoints never fail a healthy endpoint with a short timeout",
        .timeLimit(.minutes(2)))
    func slowNeighbours() async throws {
        let directory = try TemporaryDirectory()
        let quadratic = try HostileServer(.craftedBody(String(repeating: "<title>", count: 590_000)))
        let healthy = try HostileServer(.craftedBody("ok"))
        defer {
            quadratic.stop()
            healthy.stop()
        }
        let slow = { (name: String) in
            "  - { name: \(name), url: \"http://127.0.0.1:\(quadratic.port)/\(name)\", interval: 1s, timeout: 1s, "
                + "expect: { body_matches: \"(?s)<title>.*</title>\" } }\n"
        }
        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        endpoints:
          - { name: victim, url: "http://127.0.0.1:\(healthy.port)/", interval: 1s, timeout: 500ms, expect: { body_matches: ok } }
        \(slow("hostile"))\(slow("hostile2"))
        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }
        try await MetricsEndpointTests.wait("the slow searches at their limit") {
            Self.probes(Self.events(directory), of: "hostile").contains { $0["error_category"] as? String == "pattern_limit" }
        }
        try await Task.sleep(for: .seconds(10))
        let victim = Self.probes(Self.events(directory), of: "victim")
        print(
            "victim beside two slow searches: \(victim.count) probes, \(victim.filter { $0["outcome"] as? String != "success" }.count) not successes"
        )
        #expect(victim.count >= 3)
        #expect(victim.allSatisfy { $0["outcome"] as? String == "success" }, "\(victim.filter { $0["outcome"] as? String != "success" })")
        #expect(Self.state(Self.events(directory), of: "victim") == "up")
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(10)) == 0)
    }

    /// Round 6 (review): 24 main-file endpoints whose server answers with bodies that exhaust their pattern filled
    /// the main lane's 16 places: a healthy endpoint's search waited 10 s behind them, or was refused. Endpoints
    /// whose last search reached a limit now wait apart, after the others. Under a loaded machine the victim had 0
    /// verdicts in 16 s: hostile endpoints refused before their first search ran still counted as cheap, and went
    /// ahead of it; they now wait between the two.
    @Test("Attack: 20 endpoints exhausting their patterns neither delay nor fail a healthy endpoint's search", .timeLimit(.minutes(2)))
    func costlyNeighboursWaitApart() async throws {
        let directory = try TemporaryDirectory()
        let quadratic = try HostileServer(.craftedBody(String(repeating: "<title>", count: 590_000)))
        let healthy = try HostileServer(.craftedBody("ok"))
        defer {
            quadratic.stop()
            healthy.stop()
        }
        let hostile = (0..<20).map { index in
            "  - { name: h\(index), url: \"http://127.0.0.1:\(quadratic.port)/\(index)\", interval: 5s, timeout: 5s, "
                + "expect: { body_matches: \"(?s)<title>.*</title>\" } }\n"
        }
        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        endpoints:
          - { name: victim, url: "http://127.0.0.1:\(healthy.port)/", interval: 2s, timeout: 2s, expect: { body_matches: ok } }
        \(hostile.joined())
        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }
        // From the victim's first verdict on: the hostile endpoints' first searches are still coming (20 searches
        // of up to 2 s of CPU each, one lane at a time, 16 waiting at most), which is when endpoints not searched yet
        // went ahead of it. The bound on a hang leaves room for a loaded machine (scripts/test runs three shards at once).
        try await MetricsEndpointTests.wait("the victim's first verdict", timeout: .seconds(90)) {
            !Self.probes(Self.events(directory), of: "victim").isEmpty
        }
        let before = Self.events(directory).count
        try await Task.sleep(for: .seconds(16))
        let window = Array(Self.events(directory).dropFirst(before))
        let victim = Self.probes(window, of: "victim")
        // The hostile searches the lane ran between two of the victim's verdicts (the window starts at its first):
        // what its searches waited behind. Each waits at most for the search running when it comes; the others ran
        // while the victim slept its 2 s interval, at 0.4 s or more a search in a debug build: 6 at most. A
        // machine's load makes every search slower, so fewer, not more. Before, 10 ran ahead of its second verdict.
        var searchedBetween: [Int] = []
        var searched = 0
        for event in window where event["event"] as? String == "probe.completed" {
            if event["endpoint"] as? String == "victim" {
                searchedBetween.append(searched)
                searched = 0
            } else if (event["message"] as? String)?.hasPrefix("the body_matches pattern ") == true {
                searched += 1
            }
        }
        print(
            "victim beside 20 exhausted patterns: \(victim.count) probes in 16 s at a 2 s interval; "
                + "hostile searches run before each: \(searchedBetween)")
        #expect(victim.count >= 2, "the victim's searches waited behind the costly ones: \(victim.count) probes in 16 s")
        #expect(
            searchedBetween.allSatisfy { $0 <= 7 },
            "the victim's searches waited behind queued costly ones: \(searchedBetween) hostile searches ran between its verdicts")
        #expect(victim.allSatisfy { $0["outcome"] as? String == "success" }, "\(victim.filter { $0["outcome"] as? String != "success" })")
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(10)) == 0)
    }

    @Test(
        "check-config refuses a pattern PCRE2 refuses, naming the key, line, column and PCRE2's reason, in the main file or an included one",
        arguments: [
            ("([a-z", "missing terminating ] for character class at offset 5 of the pattern"),
            ("a{2,1}", "numbers out of order in {} quantifier at offset 5 of the pattern"),
            ("(?<=a+)b", "lookbehind assertion is not fixed length at offset 0 of the pattern"),
            (#"\\C"#, #"using \C is disabled by the application at offset 2 of the pattern"#),
        ])
    func refusedPattern(_ pattern: String, _ reason: String) throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        let endpoint = "endpoints:\n  - name: e\n    url: http://127.0.0.1:9/\n    expect: { body_matches: \"\(pattern)\" }\n"
        for included in [false, true] {
            let file = included ? "conf.d/team.yaml" : "pinpath.yaml"
            try endpoint.write(toFile: directory.file(file), atomically: true, encoding: .utf8)
            if included { try "include: conf.d/*.yaml\n".write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8) }
            let result = try Shell.run([Shell.pinpath, "check-config", "--config", directory.file("pinpath.yaml")])
            #expect(result.status == 78, "\(pattern): \(result.stdout)")
            let shown = pattern.replacingOccurrences(of: #"\\"#, with: #"\"#)
            let expected =
                "\(directory.file(file)):4:29: endpoints[0].expect.body_matches: \"\(shown)\" is not a valid regular expression"
                + " (PCRE2 syntax): \(reason)"
            #expect(result.stderr.contains(expected), "\(pattern) (included: \(included)): \(result.stderr)")
        }
    }
}
