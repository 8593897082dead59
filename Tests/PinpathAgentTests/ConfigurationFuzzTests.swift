import PinpathFuzzing
import Testing

/// The fuzz check of the YAML configuration (Tests/PinpathFuzzing), in bounded form: the committed corpus
/// and regressions, then seeded mutations (replay one with PINPATH_FUZZ_SEED).
@Suite("Fuzz inputs: configuration")
struct ConfigurationFuzzTests {
    @Test("Committed inputs and seeded mutations keep their promises")
    func fuzzInputs() throws {
        let failures = try PropertyRun.failures(.configuration, mutations: 5000)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}

/// What fuzzing the configuration found, pinned down with exact positions.
@Suite("Configuration: syntax errors at the right place")
struct ConfigurationSyntaxPositionTests {
    /// A character YAML refuses is reported at its line and column, counted as libyaml counts: lines broken
    /// at CR LF (once), CR, LF, NEL, LS and PS; columns in Unicode scalars. Found by FuzzConfiguration:
    /// CR LF lines were not counted, so the line was 1 and the column past the end of it.
    @Test(arguments: [
        ("a: 1\r\nb: 2\r\nc: \u{1}\r\n", 3, 4),
        ("a: 1\rb: \u{7F}", 2, 4),
        ("a: \"é\u{85}\u{2028}x\u{8}\"", 3, 2),
        ("# \u{600}\u{FFFE}", 1, 4),
    ])
    func refusedCharacter(text: String, line: Int, column: Int) {
        #expect(throws: (any Error).self) {
            try loadConfiguration(text)
        }
        let problems = configurationProblems(text)
        #expect(problems == ["test.yaml:\(line):\(column): invalid YAML: control characters are not allowed"])
    }

    /// Found in review while fuzzing: Yams composes recursively, so 7,000 `[` (a 7 KB file) overflowed the
    /// stack of `pinpath check-config` and of the agent's reload. Now refused at the 65th level, before Yams.
    @Test(arguments: [
        ("a: " + String(repeating: "[", count: 100_000), 1, 67),
        (String(repeating: "- ", count: 70_000) + "x", 1, 129),
        ("a:\n" + (1..<100).map { String(repeating: " ", count: $0) + "b\($0):\n" }.joined(), 65, 65),
    ])
    func deepNesting(text: String, line: Int, column: Int) {
        #expect(
            configurationProblems(text) == [
                "test.yaml:\(line):\(column): nested deeper than 64 levels; the configuration needs 5 (is this the right file?)"
            ])
    }

    /// Found in review: an alias pastes its anchored subtree in, so anchors each 60 levels deep, each holding the
    /// previous one's alias, built a tree 60 × N levels deep from a file that grows only linearly. The first
    /// alias that would go past the limit is refused where it stands.
    @Test("Aliases count as deep as the nodes they stand for")
    func deepThroughAliases() {
        let open = String(repeating: "[", count: 60)
        let close = String(repeating: "]", count: 60)
        let text =
            "a0: &a0 \(open)x\(close)\n"
            + (1..<600).map { "a\($0): &a\($0) \(open)*a\($0 - 1)\(close)\n" }.joined()
        #expect(
            configurationProblems(text) == [
                "test.yaml:2:69: nested deeper than 64 levels; the configuration needs 5 (is this the right file?)"
            ])
    }

    @Test("64 levels are still read (and refused only for what they hold)")
    func nestingAtTheLimit() {
        let text = "a: " + String(repeating: "[", count: 63) + String(repeating: "]", count: 63)
        #expect(
            configurationProblems(text) == [
                "test.yaml:1:1: a: unknown key \"a\"; known keys: events, policies, defaults, endpoints, include, reachability, metrics, proxy, connectivity, modules"
            ])
    }

    /// Found in review while fuzzing: `ca_file: /dev/zero` was read until memory ran out, and the agent aborted.
    @Test("A CA file that is a device is a problem of that key, not an abort")
    func deviceAsCAFile() {
        let yaml = "policies:\n  p:\n    mode: none\n    ca_file: /dev/zero\n"
        let problems = configurationProblems(yaml)
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("test.yaml:4:14: policies.p.ca_file: /dev/zero: more than 64 MiB;") == true, "\(problems)")
    }
}
