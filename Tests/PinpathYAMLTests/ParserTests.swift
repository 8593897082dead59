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

    /// Aliases of aliases: 10 nodes written per level, 10^9 nodes for a reader to walk. Composing alone was
    /// cheap (copies share storage), but every reader of the tree walked the expansion.
    @Test("A billion laughs is refused at the alias that passes the limit, naming the limit")
    func billionLaughs() throws {
        var yaml = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            yaml += "a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]\n"
        }
        let start = ContinuousClock.now
        // Nothing returned: a test that failed would otherwise try to print a billion nodes.
        let error = #expect(throws: YamlError.self) { _ = try Parser(yaml: yaml).singleRoot() }
        print("billion laughs (\(yaml.utf8.count) bytes) refused after \(ContinuousClock.now - start)")
        guard case .composer(nil, let problem, let mark, _) = error else {
            Issue.record("expected a composer error, got \(String(describing: error))")
            return
        }
        // a3 stands for 11,111 nodes: its 8th alias, in a4 on line 5, passes 100,000.
        #expect(mark == Mark(line: 5, column: 45))
        #expect(
            problem == """
                this alias expands the document past 100000 nodes, the most aliases may make it stand for (100000, or 10 times \
                the 21 nodes written so far); write the values out instead of aliasing them so often
                """)
    }

    /// The quadratic case: one anchored list of 2,000 items, aliased 20,000 times (64 KB): 40 million nodes for
    /// a reader, refused as soon as the aliases pass the limit.
    @Test("One big anchor aliased thousands of times is refused")
    func bigAnchorAliasedOften() throws {
        let yaml =
            "x: &a [\(Array(repeating: "y", count: 2_000).joined(separator: ","))]\nz: [\(Array(repeating: "*a", count: 20_000).joined(separator: ","))]\n"
        let start = ContinuousClock.now
        // Nothing returned: a test that failed would otherwise try to print millions of nodes.
        let error = #expect(throws: YamlError.self) { _ = try Parser(yaml: yaml).singleRoot() }
        print("\(yaml.utf8.count) bytes aliasing a 2,000-item list refused after \(ContinuousClock.now - start)")
        guard case .composer(_, let problem, let mark, _) = error else {
            Issue.record("expected a composer error, got \(String(describing: error))")
            return
        }
        #expect(mark.line == 2)
        #expect(problem.hasPrefix("this alias expands the document past 100000 nodes"), "\(problem)")
    }

    @Test("Aliases within the limit compose, and the limit is the caller's to set")
    func aliasesWithinTheLimit() throws {
        // 1,000 items each aliasing a 7-node mapping: 7,000 nodes from aliases, far inside the limit.
        let yaml =
            "shared: &h {a: 1, b: 2, c: 3}\nitems:\n" + (0..<1_000).map { "  - {name: n\($0), headers: *h}\n" }.joined()
        let root = try #require(try Parser(yaml: yaml).singleRoot())
        guard case .sequence(let items) = try #require(root.mapping?["items"]) else {
            Issue.record("items is not a list")
            return
        }
        #expect(items.count == 1_000)
        #expect(items.last?.mapping?["headers"]?.mapping?["c"]?.string == "3")
        // The limit is the caller's: a floor of 100 nodes and a multiple of 1 refuse this text, where the aliases
        // pass the nodes written so far; no floor and 10 times what is written accept it.
        #expect(throws: YamlError.self) {
            _ = try Parser(yaml: yaml, aliasLimit: AliasLimit(nodes: 100, multipleOfWritten: 1)).singleRoot()
        }
        #expect(try Parser(yaml: yaml, aliasLimit: AliasLimit(nodes: 0, multipleOfWritten: 10)).singleRoot() != nil)
    }

    @Test("A document counts the nodes and text its text writes; a node counts what it stands for, aliases at each place")
    func writtenAndExpandedNodes() throws {
        // Written: the root, 4 keys, the anchored list and its 3 items, the empty list and x: 11 nodes, 4 + 3 + 1 bytes
        // of scalars; the alias adds none.
        let document = try #require(try Parser(yaml: "a: &l [1, 2, 3]\nb: *l\nc: []\nd: x\n").singleDocument())
        #expect(document.written == TreeSize(nodes: 11, bytes: 8))
        // Expanded: 1 + (a, [1, 2, 3]) + (b, [1, 2, 3]) + (c, []) + (d, x) = 1 + 5 + 5 + 2 + 2 nodes, 8 + 3 bytes.
        #expect(document.root.size == TreeSize(nodes: 15, bytes: 11))
        #expect(try Parser(yaml: "# nothing\n").singleDocument() == nil)
    }

    /// Found by the round-3 review: a 90 KB scalar is one node, so aliasing it 300 times passed the node bound
    /// and cost every reader 300 × 90 KB (a pattern compiled each time: 31 s). Aliases are bounded by the bytes
    /// of text they repeat too: 1 MiB, or 10 times the text written.
    @Test("Aliases of a long scalar are bounded by the text they repeat, not only by nodes")
    func aliasedText() throws {
        let long = String(repeating: "x", count: 100_000)
        let aliases = { (count: Int) in "long: &t \"\(long)\"\nitems:\n" + String(repeating: "  - *t\n", count: count) }
        // The anchor and 9 aliases: 1 MB, inside the 1 MiB floor.
        let accepted = try #require(try Parser(yaml: aliases(9)).singleRoot())
        #expect(accepted.size.bytes == 1_000_000 + "long".utf8.count + "items".utf8.count)
        do {
            _ = try Parser(yaml: aliases(300)).singleRoot()
            Issue.record("300 aliases of 100 KB were accepted")
        } catch {
            #expect(
                "\(error)".contains(
                    """
                    this alias expands the document past 1048576 bytes of text, the most aliases may make it stand for (1048576, or \
                    10 times the 100009 bytes of text written so far)
                    """), "\(error)")
        }
    }

    @Test("Thousands of nested collections compose without recursion, when the caller allows them")
    func deepNesting() throws {
        let depth = 5_000
        let yaml = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        var node = try #require(try Parser(yaml: yaml, maximumDepth: depth).singleRoot())
        var levels = 0
        while case .sequence(let list) = node {
            levels += 1
            guard let inner = list.first else { break }
            node = inner
        }
        #expect(levels == depth)
    }

    /// The bound every recursive reader of the tree (and Swift freeing it) relies on: the parser's own, so that no
    /// caller can forget it.
    @Test("Nesting past the limit is refused at the collection that passes it; at the limit it composes")
    func nestingLimit() throws {
        let limit = Parser.standardMaximumDepth
        #expect(try Parser(yaml: String(repeating: "[", count: limit) + String(repeating: "]", count: limit)).singleRoot() != nil)
        #expect {
            try Parser(yaml: "a: " + String(repeating: "[", count: 100_000)).singleRoot()
        } throws: { error in
            guard case .tooDeep(limit, let mark, _) = error as? YamlError else { return false }
            return mark == Mark(line: 1, column: 3 + limit)
        }
        #expect {
            try Parser(yaml: "- - - x\n", maximumDepth: 2).singleRoot()
        } throws: { error in
            guard case .tooDeep(2, let mark, _) = error as? YamlError else { return false }
            return mark == Mark(line: 1, column: 5) && "\(error)" == "1:5: composer: nested deeper than 2 levels"
        }
    }

    /// An alias pastes its anchored subtree in: anchors each nested a little, each holding the previous one's
    /// alias, would build a tree far deeper than any collection written.
    @Test("An alias counts as deep as the node it stands for")
    func nestingThroughAliases() throws {
        #expect(try Parser(yaml: "a: &a [[x]]\nb: [*a]\n", maximumDepth: 4).singleRoot() != nil)
        #expect {
            try Parser(yaml: "a: &a [[x]]\nb: [[*a]]\n", maximumDepth: 4).singleRoot()
        } throws: { error in
            guard case .tooDeep(4, let mark, _) = error as? YamlError else { return false }
            return mark == Mark(line: 2, column: 6)
        }
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
            guard case .secondDocument(let mark, _) = error as? YamlError else { return false }
            return mark == Mark(line: 2, column: 1)
        }
        #expect {
            try Parser(yaml: "a: é\u{1}").singleRoot()
        } throws: { error in
            guard case .reader(let problem, let offset, _, _) = error as? YamlError else { return false }
            return problem == "control characters are not allowed" && offset == 4
        }
    }
}
