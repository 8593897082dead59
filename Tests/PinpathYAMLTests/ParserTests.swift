import PinpathYAML
import Testing

/// The composer over libyaml: what the configuration decoder relies on (positions, styles, aliases, the
/// errors it turns into messages). The decoder's own behaviour is checked by PinpathAgentTests.
@Suite("YAML: composing nodes with libyaml")
struct ParserTests {
    @Test("Nodes keep their text, style and position; keys stay in order, repeated ones included")
    func nodes() throws {
        let root = try #require(try Parser(yaml: "a: 1\nb:\n  - \"true\"\n  - 'x'\n  - ~\na: again\n").singleRoot())
        let mapping = try #require(root.mapping)
        #expect(root.mark == Mark(line: 1, column: 1))
        #expect(mapping.map { $0.key.string } == ["a", "b", "a"])
        #expect(mapping["a"]?.string == "again")  // the last one wins, as in Yams
        #expect(mapping["missing"] == nil)
        guard case .sequence(let list) = try #require(mapping["b"]) else {
            Issue.record("b is not a list")
            return
        }
        #expect(list.mark == Mark(line: 3, column: 3))
        let scalars = list.compactMap { node -> Node.Scalar? in
            if case .scalar(let scalar) = node { scalar } else { nil }
        }
        #expect(scalars.map(\.string) == ["true", "x", "~"])
        #expect(scalars.map(\.style) == [.doubleQuoted, .singleQuoted, .plain])
        #expect(scalars.map(\.mark) == [Mark(line: 3, column: 5), Mark(line: 4, column: 5), Mark(line: 5, column: 5)])
    }

    @Test("An empty text or one of comments has no root; an empty document is an empty scalar")
    func emptyDocuments() throws {
        #expect(try Parser(yaml: "").singleRoot() == nil)
        #expect(try Parser(yaml: "# nothing\n").singleRoot() == nil)
        let root = try Parser(yaml: "---\n").singleRoot()
        guard case .scalar(let scalar) = root else {
            Issue.record("expected an empty scalar, found \(String(describing: root))")
            return
        }
        #expect(scalar.string.isEmpty && scalar.style == .plain)
    }

    @Test("An alias is the anchored node, at the position of its anchor")
    func aliases() throws {
        let root = try #require(try Parser(yaml: "base: &b {x: 1}\nother: *b\n").singleRoot())
        let other = try #require(root.mapping?["other"])
        #expect(other.mapping?["x"]?.string == "1")
        #expect(other.mark == Mark(line: 1, column: 7))  // libyaml starts the node at its anchor
    }

    @Test("A billion laughs composes in the memory of its text: aliases share the anchored node")
    func billionLaughs() throws {
        var yaml = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            yaml += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        let root = try #require(try Parser(yaml: yaml).singleRoot())
        #expect(root.mapping?.count == 10)
    }

    @Test("Thousands of nested collections compose without recursion")
    func deepNesting() throws {
        let depth = 5_000
        let yaml = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var node = try #require(try Parser(yaml: yaml).singleRoot())
        var levels = 0
        while case .sequence(let list) = node {
            levels += 1
            guard let inner = list.first else { break }
            node = inner
        }
        #expect(levels == depth)
    }

    @Test("Errors carry libyaml's problem, context and position")
    func errors() {
        #expect {
            try Parser(yaml: "a: [1\n").singleRoot()
        } throws: { error in
            guard case .parser(let context, let problem, let mark, _) = error as? YamlError else { return false }
            return problem == "did not find expected ',' or ']'" && context?.text == "while parsing a flow sequence"
                && context?.mark == Mark(line: 1, column: 4) && mark == Mark(line: 2, column: 1)
        }
        #expect {
            try Parser(yaml: "a: *missing\n").singleRoot()
        } throws: { error in
            guard case .composer(nil, let problem, let mark, _) = error as? YamlError else { return false }
            return problem == "found undefined alias" && mark == Mark(line: 1, column: 4)
        }
        #expect {
            try Parser(yaml: "a: &x [*x]\n").singleRoot()
        } throws: { error in
            guard case .composer(_, let problem, _, _) = error as? YamlError else { return false }
            return problem == "found undefined alias"
        }
        #expect {
            try Parser(yaml: "a: 1\n---\nb: 2\n").singleRoot()
        } throws: { error in
            guard case .composer(_, let problem, let mark, _) = error as? YamlError else { return false }
            return problem == "but found another document" && mark == Mark(line: 2, column: 1)
        }
        #expect {
            try Parser(yaml: "a: é\u{1}").singleRoot()
        } throws: { error in
            guard case .reader(let problem, let offset, _, _) = error as? YamlError else { return false }
            return problem == "control characters are not allowed" && offset == 4
        }
    }
}
