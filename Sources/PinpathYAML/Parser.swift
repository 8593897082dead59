import CYAML

/// Composes YAML text into a ``Node`` tree with libyaml's event parser (Debian's libyaml), keeping the
/// position of every node.
///
/// Aliases become the node their anchor names, as Yams composes them: the copy shares storage with the
/// original (Swift arrays are copy-on-write), so composing costs memory in proportion to the text. But every
/// reader of the tree walks each alias's copy again, so aliases of aliases ("billion laughs") or one big
/// anchor aliased thousands of times make a small text cost a reader minutes; composition counts the nodes
/// and the bytes of text each alias stands for and refuses the document past ``AliasLimit``
/// (``AliasLimit/standard`` unless told otherwise). An alias to an anchor not yet closed (`&a [*a]`) is an undefined alias. Merge keys (`<<`)
/// and tags are not applied: readers see them as written.
///
/// Composition keeps its own stack, but a reader walking the tree and Swift freeing it both recurse: so
/// composition refuses a document nested deeper than ``maximumDepth`` (an alias counting as deep as the node it
/// stands for), at the first collection or alias that goes past it, and no reader ever sees a deeper tree.
public struct Parser: Sendable {
    /// The text to compose.
    public let yaml: String
    /// How far aliases may expand the document.
    public let aliasLimit: AliasLimit
    /// How many collections deep the document may be (the root collection is level 1).
    public let maximumDepth: Int

    /// 64 levels: far more than any configuration needs, and shallow enough for every recursive reader.
    public static let standardMaximumDepth = 64

    public init(yaml: String, aliasLimit: AliasLimit = .standard, maximumDepth: Int = Parser.standardMaximumDepth) {
        self.yaml = yaml
        self.aliasLimit = aliasLimit
        self.maximumDepth = maximumDepth
    }

    /// The root of the one document in the text; `nil` when the text holds none (empty, or only comments).
    ///
    /// - Throws: ``YamlError`` with libyaml's problem and position; a second document is
    ///   ``YamlError/secondDocument(_:yaml:)`` at its start; aliases expanding it past ``aliasLimit`` are
    ///   ``YamlError/composer(context:problem:_:yaml:)``, at the alias that went past it, with a problem naming the
    ///   limit; nesting past ``maximumDepth`` is ``YamlError/tooDeep(limit:_:yaml:)``.
    public func singleRoot() throws(YamlError) -> Node? {
        try singleDocument()?.root
    }

    /// The one document in the text with the size of what its text writes; `nil` when the text holds none.
    /// Throws as ``singleRoot()`` does.
    public func singleDocument() throws(YamlError) -> Document? {
        let reader = try EventReader(yaml: yaml)
        _ = try reader.next()  // the stream's start
        guard try reader.next().kind != .streamEnd else { return nil }  // or the document's start
        var composer = Composer(yaml: yaml, aliasLimit: aliasLimit, maximumDepth: maximumDepth)
        let root = try composer.node(startingWith: reader.next(), from: reader)
        _ = try reader.next()  // the document's end
        let next = try reader.next()
        guard next.kind == .streamEnd else {
            throw .secondDocument(next.mark, yaml: yaml)
        }
        return Document(root: root, written: composer.written)
    }
}

/// A composed document: its root, and the size of what its text writes (scalars and collections, not aliases),
/// the measure a reader that copies nodes around (`defaults:` into every endpoint) bounds its copies by, as
/// ``AliasLimit`` bounds aliases.
public struct Document: Sendable {
    public let root: Node
    public let written: TreeSize
}

/// How much a tree holds: its nodes, and the bytes of its scalars' text. A reader's work grows with both: a
/// 90 KB pattern is one node, but compiling it a thousand times costs what a thousand nodes never would.
public struct TreeSize: Sendable, Equatable, CustomStringConvertible {
    /// Scalars and collections (a mapping's keys included).
    public var nodes: Int
    /// The UTF-8 bytes of its scalars (keys and values).
    public var bytes: Int

    public init(nodes: Int, bytes: Int) {
        self.nodes = nodes
        self.bytes = bytes
    }

    public static let zero = TreeSize(nodes: 0, bytes: 0)

    /// Both counts added, or `Int.max` past it: with a limit of `Int.max`, a billion laughs still counts without trapping.
    public static func + (lhs: TreeSize, rhs: TreeSize) -> TreeSize {
        TreeSize(nodes: saturatingSum(lhs.nodes, rhs.nodes), bytes: saturatingSum(lhs.bytes, rhs.bytes))
    }

    public static func += (lhs: inout TreeSize, rhs: TreeSize) { lhs = lhs + rhs }

    public var description: String { "\(nodes) nodes and \(bytes) bytes" }

    private static func saturatingSum(_ a: Int, _ b: Int) -> Int {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : total
    }
}

/// How much a document may stand for once its aliases are expanded: ``nodes`` nodes and ``bytes`` bytes of text,
/// or ``multipleOfWritten`` times what its text writes when that is more. Configuration that shares a value
/// through an anchor stays well within it; a document that needs more is an attack or a mistake, and costs every
/// reader in proportion to the expansion, not to the text.
public struct AliasLimit: Sendable, Equatable {
    /// The nodes any document may stand for, however few it writes.
    public var nodes: Int
    /// The bytes of scalar text any document may stand for, however few it writes.
    public var bytes: Int
    /// How many times what it writes a larger document may stand for.
    public var multipleOfWritten: Int

    public init(nodes: Int, bytes: Int = 1 << 20, multipleOfWritten: Int) {
        self.nodes = nodes
        self.bytes = bytes
        self.multipleOfWritten = multipleOfWritten
    }

    /// 100,000 nodes and 1 MiB of text, or 10 times what is written: a file of a thousand endpoints each aliasing
    /// a few shared values is far inside it, and reading what it allows takes a fraction of a second.
    public static let standard = AliasLimit(nodes: 100_000, bytes: 1 << 20, multipleOfWritten: 10)

    /// The most a document that writes `written` may stand for.
    public func allowed(written: TreeSize) -> TreeSize {
        TreeSize(
            nodes: Self.allowed(floor: nodes, written.nodes, multipleOfWritten),
            bytes: Self.allowed(floor: bytes, written.bytes, multipleOfWritten))
    }

    /// The first measure by which `size` passes what a document that writes `written` may stand for, with the
    /// most it may be and the floor, for the message; `nil` within both.
    public func excess(of size: TreeSize, written: TreeSize) -> (unit: String, allowed: Int, floor: Int, written: Int)? {
        let allowed = allowed(written: written)
        if size.nodes > allowed.nodes { return ("nodes", allowed.nodes, nodes, written.nodes) }
        if size.bytes > allowed.bytes { return ("bytes of text", allowed.bytes, bytes, written.bytes) }
        return nil
    }

    private static func allowed(floor: Int, _ written: Int, _ multiple: Int) -> Int {
        max(floor, written.multipliedReportingOverflow(by: multiple).overflow ? .max : written * multiple)
    }
}

/// Builds nodes from events with an explicit stack of the collections still open.
private struct Composer {
    let yaml: String
    let aliasLimit: AliasLimit
    let maximumDepth: Int
    /// The nodes anchored so far, with what each stands for and how many levels of collections it holds (0
    /// for a scalar); a later anchor of the same name replaces an earlier one.
    var anchors: [String: Composed] = [:]
    /// What the text writes (scalars and collections, not aliases), so far.
    var written = TreeSize.zero
    /// What the document stands for so far: what is written and what each alias repeats.
    var expanded = TreeSize.zero

    /// A node composed, with what it stands for and its height (levels of collections, itself included).
    struct Composed {
        let node: Node
        let size: TreeSize
        let height: Int
    }

    private struct OpenCollection {
        let isMapping: Bool
        let anchor: String?
        let mark: Mark
        /// For a mapping, keys and values alternate.
        var items: [Node] = []
        /// What it stands for, itself and aliases' expansions included.
        var size = TreeSize(nodes: 1, bytes: 0)
        /// The height of its tallest item so far.
        var tallestItem = 0

        var node: Node {
            guard isMapping else { return .sequence(Node.Sequence(items, mark)) }
            let pairs = stride(from: 0, to: items.count - 1, by: 2).map { (items[$0], items[$0 + 1]) }
            return .mapping(Node.Mapping(pairs, mark))
        }
    }

    init(yaml: String, aliasLimit: AliasLimit, maximumDepth: Int) {
        self.yaml = yaml
        self.aliasLimit = aliasLimit
        self.maximumDepth = maximumDepth
    }

    mutating func node(startingWith first: Event, from reader: EventReader) throws(YamlError) -> Node {
        var open: [OpenCollection] = []
        var event = first
        while true {
            let completed: Composed?
            switch event.kind {
            case .alias:
                guard let anchor = event.anchor, let anchored = anchors[anchor] else {
                    throw .composer(context: nil, problem: "found undefined alias", event.mark, yaml: yaml)
                }
                // Composing pastes the anchored subtree in here: it counts as deep as it is.
                if open.count + anchored.height > maximumDepth { throw .tooDeep(limit: maximumDepth, event.mark, yaml: yaml) }
                expanded += anchored.size
                if let excess = aliasLimit.excess(of: expanded, written: written) {
                    throw .composer(
                        context: nil,
                        problem: """
                            this alias expands the document past \(excess.allowed) \(excess.unit), the most aliases may make it \
                            stand for (\(excess.floor), or \(aliasLimit.multipleOfWritten) times the \(excess.written) \(excess.unit) \
                            written so far); write the values out instead of aliasing them so often
                            """,
                        event.mark, yaml: yaml)
                }
                completed = anchored
            case .scalar:
                let node = Node.scalar(event.scalar ?? Node.Scalar("", .plain, event.mark))
                let size = TreeSize(nodes: 1, bytes: event.scalar?.string.utf8.count ?? 0)
                let scalar = Composed(node: node, size: size, height: 0)
                if let anchor = event.anchor { anchors[anchor] = scalar }
                written += size
                expanded += size
                completed = scalar
            case .sequenceStart, .mappingStart:
                if open.count >= maximumDepth { throw .tooDeep(limit: maximumDepth, event.mark, yaml: yaml) }
                open.append(OpenCollection(isMapping: event.kind == .mappingStart, anchor: event.anchor, mark: event.mark))
                written += TreeSize(nodes: 1, bytes: 0)
                expanded += TreeSize(nodes: 1, bytes: 0)
                completed = nil
            case .sequenceEnd, .mappingEnd:
                guard let collection = open.popLast() else {
                    throw .composer(context: nil, problem: "unexpected end of a collection", event.mark, yaml: yaml)
                }
                let composed = Composed(node: collection.node, size: collection.size, height: collection.tallestItem + 1)
                if let anchor = collection.anchor { anchors[anchor] = composed }
                completed = composed
            case .streamStart, .streamEnd, .documentStart, .documentEnd, .none:
                // libyaml's parser never sends these inside a document.
                throw .composer(context: nil, problem: "unexpected event", event.mark, yaml: yaml)
            }
            if let completed {
                guard !open.isEmpty else { return completed.node }
                open[open.count - 1].items.append(completed.node)
                open[open.count - 1].size += completed.size
                open[open.count - 1].tallestItem = max(open[open.count - 1].tallestItem, completed.height)
            }
            event = try reader.next()
        }
    }
}

/// One libyaml event, copied out of libyaml's memory.
private struct Event {
    enum Kind {
        case none, streamStart, streamEnd, documentStart, documentEnd, alias, scalar
        case sequenceStart, sequenceEnd, mappingStart, mappingEnd
    }

    var kind: Kind
    var mark: Mark
    var anchor: String?
    var scalar: Node.Scalar?

    init(_ event: yaml_event_t) {
        mark = Mark(line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1)
        switch event.type {
        case YAML_STREAM_START_EVENT: kind = .streamStart
        case YAML_STREAM_END_EVENT: kind = .streamEnd
        case YAML_DOCUMENT_START_EVENT: kind = .documentStart
        case YAML_DOCUMENT_END_EVENT: kind = .documentEnd
        case YAML_ALIAS_EVENT:
            kind = .alias
            anchor = Self.text(event.data.alias.anchor)
        case YAML_SCALAR_EVENT:
            kind = .scalar
            let data = event.data.scalar
            anchor = Self.text(data.anchor)
            // A scalar's length is given: it may hold NUL characters.
            let value = String(decoding: UnsafeBufferPointer(start: data.value, count: data.length), as: UTF8.self)
            scalar = Node.Scalar(value, Node.Scalar.Style(rawValue: data.style.rawValue) ?? .any, mark)
        case YAML_SEQUENCE_START_EVENT:
            kind = .sequenceStart
            anchor = Self.text(event.data.sequence_start.anchor)
        case YAML_SEQUENCE_END_EVENT: kind = .sequenceEnd
        case YAML_MAPPING_START_EVENT:
            kind = .mappingStart
            anchor = Self.text(event.data.mapping_start.anchor)
        case YAML_MAPPING_END_EVENT: kind = .mappingEnd
        default: kind = .none
        }
    }

    private static func text(_ pointer: UnsafeMutablePointer<UInt8>?) -> String? {
        pointer.map { String(cString: UnsafePointer($0)) }
    }
}

/// Owns one `yaml_parser_t` and the UTF-8 bytes it reads; both live at fixed addresses, as libyaml keeps
/// pointers to them between calls.
private final class EventReader {
    private let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
    private let input: UnsafeMutableBufferPointer<UInt8>
    private let yaml: String

    init(yaml: String) throws(YamlError) {
        self.yaml = yaml
        input = .allocate(capacity: max(yaml.utf8.count, 1))
        _ = input.initialize(from: yaml.utf8)
        guard yaml_parser_initialize(parser) == 1 else {
            input.deallocate()
            parser.deallocate()
            throw .memory
        }
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, input.baseAddress, yaml.utf8.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
        input.deallocate()
    }

    /// Wraps `yaml_parser_parse`: the next event, copied, or libyaml's error.
    func next() throws(YamlError) -> Event {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else { throw YamlError(from: parser.pointee, yaml: yaml) }
        defer { yaml_event_delete(&event) }
        return Event(event)
    }
}
