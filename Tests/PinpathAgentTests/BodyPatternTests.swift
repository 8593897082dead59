import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// `BodyPattern` on PCRE2: the patterns the docs and the example show, and every limit a crafted text can
/// reach, each ending the search with its own error instead of a verdict.
@Suite("Body patterns (PCRE2) and their limits")
struct BodyPatternTests {
    /// What a search ended with: a verdict, or the limit that stopped it.
    static func outcome(_ pattern: String, _ text: String, limits: PatternLimits = .standard) throws -> String {
        do {
            return try BodyPattern(pattern).matches(text, limits: limits) ? "match" : "no match"
        } catch let error as PatternMatchError {
            return error.code.name
        }
    }

    @Test(
        "The patterns of the docs, the example configuration and the tests match as they say",
        arguments: [
            (#"<title>[^<]+</title>"#, "<html><title>Status</title>", "match"),
            (#"<title>[^<]+</title>"#, "<title></title>", "no match"),
            (#"max-age=[0-9]+"#, "public, max-age=600", "match"),
            (#""status":\s*"up""#, #"ok: {"status": "up"}"#, "match"),
            (#""status":\s*"up""#, #"ok: {"status": "down"}"#, "no match"),
            (#"^[0-9]+$"#, "1234", "match"),
            (#"^[0-9]+$"#, "12a4", "no match"),
            (#"^application/json"#, "application/json; charset=utf-8", "match"),
            ("o+k", "ooook", "match"),
            // PCRE2 against UTF-8: one character is one code point, \d is ASCII (as RE2), (?i) folds Unicode.
            ("^.$", "é", "match"),
            (#"^\d+$"#, "١٢٣", "no match"),
            ("(?i)ÉTÉ", "été", "match"),
            (#"\x{FFFD}"#, String(decoding: [0x61, 0xFF, 0x62], as: UTF8.self), "match"),
            ("", "", "match"),
            ("a", "", "no match"),
        ])
    func documentedPatterns(_ pattern: String, _ text: String, _ expected: String) throws {
        #expect(try Self.outcome(pattern, text) == expected)
    }

    @Test(
        "Crafted texts reach each limit, and the search ends with it",
        arguments: [
            // Exponential backtracking (the attacker's): PCRE2's own per-start limit or the count, both steps.
            ("^(a|aa)+$", String(repeating: "a", count: 60) + "!", "steps"),
            ("(a|aa)+$", String(repeating: "a", count: 5000) + "!", "steps"),
            // Quadratic: each start is cheap for PCRE2's per-start limit; only the count over the search ends it.
            ("(?s)<title>.*</title>", String(repeating: "<title>x", count: 300_000), "steps"),
            (#"(?s)a.*\d"#, String(repeating: "a", count: 1 << 20), "steps"),
            // A repeated group keeps a backtracking point per repetition.
            (#"(.|\n)*\d"#, String(repeating: "a", count: 1 << 20), "depth"),
            // Ten captures a repetition: memory runs out before depth does.
            (#"((((((((((.))))))))))*\d"#, String(repeating: "a", count: 1 << 20), "memory"),
        ])
    func limitReached(_ pattern: String, _ text: String, _ limit: String) throws {
        let outcome = try Self.outcome(pattern, text)
        // Under a sanitizer each step is slower, and the processor-time backstop may come first.
        #expect(outcome == limit || (SanitizerRun.name != nil && outcome == "processor_time"), "\(outcome)")
    }

    @Test("A fixed repeat that fails at every start counts almost no steps: processor time ends it")
    func processorTimeBackstop() throws {
        // 4 MiB of 59,999 a's then an x: a{60000} compares up to 60,000 characters at each of 4 million starts
        // (about 10^11 comparisons) but moves nowhere, so the count stays near one step a start.
        let text = String(repeating: String(repeating: "a", count: 59_999) + "x", count: 70)
        var limits = PatternLimits.standard
        limits.processorTime = .milliseconds(200)
        #expect(try Self.outcome("a{60000}", text, limits: limits) == "processor_time")
    }

    @Test("Patterns that do not backtrack decide on a 4 MiB body within the standard limits")
    func largeBodies() throws {
        let json = String(repeating: #"{"status": "down", "detail": "backend"},"#, count: 105_000)
        #expect(json.utf8.count > 4_000_000)
        #expect(try Self.outcome(#""status":\s*"up""#, json) == "no match")
        #expect(try Self.outcome(#""status":\s*"up""#, json + #"{"status": "up"}"#) == "match")
        #expect(try Self.outcome("(?i)BACKEND\",\\s*\"x", json) == "no match")
        #expect(try Self.outcome("<title>[^<]+</title>", String(repeating: "<p>hello</p>", count: 350_000)) == "no match")
        #expect(try Self.outcome(#"\w+@\w+\.com"#, String(repeating: "word ", count: 800_000)) == "no match")
    }

    @Test("A limit's error names it and says what to change; a header pattern reports by its key")
    func messages() throws {
        let pattern = try BodyPattern("^(a|aa)+$")
        let text = String(repeating: "a", count: 60) + "!"
        #expect(throws: PatternMatchError.self) { try pattern.matches(text) }
        // No processor-time backstop here, so that a slow (sanitized) build still meets the step limit first.
        var limits = PatternLimits.standard
        limits.processorTime = .seconds(3600)
        do {
            _ = try pattern.matches(text, limits: limits)
        } catch {
            #expect(error.code == .steps)
            #expect(
                error.message(forKey: "body_matches")
                    == "the body_matches pattern needed more than 50,000,000 steps on this response; nested or overlapping"
                    + " repeats such as (a|aa)+ or .*x.*y try every way to split the text: make the pattern more specific,"
                    + " or use body_contains")
        }
        let header = ResponseExpectation.HeaderExpectation(name: "X-Id", contains: nil, matches: pattern)
        #expect(throws: PatternMatchError.self) { try header.accepts(text) }
        #expect(try !header.accepts(nil))
    }

    @Test("One compiled pattern searched by many tasks at once gives each its own verdict")
    func concurrentSearches() async throws {
        let pattern = try BodyPattern(#"^(\d+)-(\d+)$"#)
        let verdicts = await withTaskGroup(of: (Int, Bool?).self) { group in
            for index in 0..<64 {
                group.addTask {
                    let text = index.isMultiple(of: 2) ? "\(index)-\(index)" : "\(index)-x"
                    return (index, try? pattern.matches(text))
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(verdicts.count == 64 && verdicts.allSatisfy { $0.value == $0.key.isMultiple(of: 2) })
    }
}
