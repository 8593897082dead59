/// A composed YAML node: what libyaml parsed, with the position of each node and aliases replaced by the node
/// their anchor names. Scalars keep their text and style; resolving types (`true`, `42`, `null`) is the
/// reader's business, so a quoted `"true"` and a plain `true` differ only in ``Scalar/style``.
///
/// The API is the subset of Yams' `Node` that pinpath's configuration decoder uses, with the same names.
public enum Node: Sendable {
    case scalar(Scalar)
    case mapping(Mapping)
    case sequence(Sequence)

    /// A scalar: its text as written (after YAML's unescaping and folding) and how it was written.
    public struct Scalar: Sendable {
        /// How a scalar was written; the raw values are libyaml's `yaml_scalar_style_t`.
        public enum Style: UInt32, Sendable {
            case any = 0
            case plain
            case singleQuoted
            case doubleQuoted
            case literal
            case folded
        }

        /// The text.
        public var string: String
        public var style: Style
        /// Where it starts; `nil` only for nodes made in code.
        public var mark: Mark?

        public init(_ string: String, _ style: Style = .any, _ mark: Mark? = nil) {
            self.string = string
            self.style = style
            self.mark = mark
        }
    }

    /// A mapping: its pairs in the order written, repeated keys included (the reader decides about those).
    public struct Mapping: Sendable, RandomAccessCollection {
        public typealias Element = (key: Node, value: Node)
        var pairs: [Element]
        /// Where it starts; `nil` only for nodes made in code.
        public var mark: Mark?

        public init(_ pairs: [(Node, Node)], _ mark: Mark? = nil) {
            self.pairs = pairs.map { (key: $0.0, value: $0.1) }
            self.mark = mark
        }

        public var startIndex: Int { pairs.startIndex }
        public var endIndex: Int { pairs.endIndex }
        public subscript(position: Int) -> Element { pairs[position] }

        /// The value of the last pair whose key is the scalar `key` (as Yams, the last one wins).
        public subscript(key: String) -> Node? {
            pairs.last { pair in
                if case .scalar(let scalar) = pair.key { scalar.string == key } else { false }
            }?.value
        }
    }

    /// A sequence: its nodes in order.
    public struct Sequence: Sendable, RandomAccessCollection {
        var nodes: [Node]
        /// Where it starts; `nil` only for nodes made in code.
        public var mark: Mark?

        public init(_ nodes: [Node], _ mark: Mark? = nil) {
            self.nodes = nodes
            self.mark = mark
        }

        public var startIndex: Int { nodes.startIndex }
        public var endIndex: Int { nodes.endIndex }
        public subscript(position: Int) -> Node { nodes[position] }
    }

    /// Where the node starts (for an alias: where the anchored node does).
    public var mark: Mark? {
        switch self {
        case .scalar(let scalar): scalar.mark
        case .mapping(let mapping): mapping.mark
        case .sequence(let sequence): sequence.mark
        }
    }

    /// The text of a scalar; `nil` for a mapping or a sequence.
    public var string: String? {
        if case .scalar(let scalar) = self { scalar.string } else { nil }
    }

    /// The mapping, when this is one.
    public var mapping: Mapping? {
        if case .mapping(let mapping) = self { mapping } else { nil }
    }

    /// What it is made of, itself included: a scalar is 1 node and its text's bytes, a collection 1 node plus its
    /// items' (a mapping's keys and values), an alias's counted at each place it appears. Walks the whole tree
    /// recursively: a tree ``Parser`` composed is at most ``Parser/maximumDepth`` deep.
    public var size: TreeSize {
        switch self {
        case .scalar(let scalar): TreeSize(nodes: 1, bytes: scalar.string.utf8.count)
        case .mapping(let mapping): mapping.pairs.reduce(TreeSize(nodes: 1, bytes: 0)) { $0 + $1.key.size + $1.value.size }
        case .sequence(let sequence): sequence.nodes.reduce(TreeSize(nodes: 1, bytes: 0)) { $0 + $1.size }
        }
    }
}
