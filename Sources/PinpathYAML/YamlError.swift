import CYAML

/// Why YAML text could not be composed, in libyaml's words and at libyaml's positions.
///
/// The cases and their values are those of Yams' `YamlError` that a parser can produce.
public enum YamlError: Error, Sendable, CustomStringConvertible {
    /// libyaml could not allocate memory.
    case memory
    /// The text is not a valid stream of characters (a control character, say): `offset` is where, in
    /// Characters from the start of `yaml`; `value` the offending code (-1 for none).
    case reader(problem: String, offset: Int?, value: Int32, yaml: String)
    /// The scanner refused a token at the mark.
    case scanner(context: Context?, problem: String, Mark, yaml: String)
    /// The parser refused the structure at the mark.
    case parser(context: Context?, problem: String, Mark, yaml: String)
    /// Composing nodes failed at the mark: an undefined alias, or aliases past the ``AliasLimit``.
    case composer(context: Context?, problem: String, Mark, yaml: String)
    /// A second document starts at the mark, where only one is read (``Parser/singleDocument()``): callers tell the
    /// user to remove the `---` by this case, not by libyaml's words.
    case secondDocument(Mark, yaml: String)
    /// The collection or alias at the mark would nest the document deeper than `limit` levels
    /// (``Parser/maximumDepth``).
    case tooDeep(limit: Int, Mark, yaml: String)

    /// What libyaml was reading when it failed (`while parsing a block mapping`) and where that started.
    public struct Context: Sendable, CustomStringConvertible {
        public let text: String
        public let mark: Mark

        public var description: String { "\(text) in line \(mark.line), column \(mark.column)" }
    }

    public var description: String {
        switch self {
        case .memory: "Memory error"
        case .reader(let problem, let offset, let value, _):
            "reader: \(problem) at offset \(offset.map(String.init) ?? "unknown"), value \(value)"
        case .scanner(let context, let problem, let mark, _): "\(mark): scanner: \(Self.prefix(context))\(problem)"
        case .parser(let context, let problem, let mark, _): "\(mark): parser: \(Self.prefix(context))\(problem)"
        case .composer(let context, let problem, let mark, _): "\(mark): composer: \(Self.prefix(context))\(problem)"
        case .tooDeep(let limit, let mark, _): "\(mark): composer: nested deeper than \(limit) levels"
        case .secondDocument(let mark, _): "\(mark): composer: expected a single document in the stream, but found another document"
        }
    }

    private static func prefix(_ context: Context?) -> String { context.map { "\($0), " } ?? "" }

    /// The error a failed `yaml_parser_parse` left in `parser`.
    init(from parser: yaml_parser_t, yaml: String) {
        func mark(_ mark: yaml_mark_t) -> Mark { Mark(line: Int(mark.line) + 1, column: Int(mark.column) + 1) }
        let problem = parser.problem.map { String(cString: $0) } ?? "unknown problem"
        let context = parser.context.map { Context(text: String(cString: $0), mark: mark(parser.context_mark)) }
        switch parser.error {
        case YAML_READER_ERROR:
            // libyaml counts bytes of the UTF-8 input; a Character offset, as Yams gave it.
            let index = yaml.utf8.index(yaml.utf8.startIndex, offsetBy: parser.problem_offset, limitedBy: yaml.utf8.endIndex)?
                .samePosition(in: yaml)
            let offset = index.map { yaml.distance(from: yaml.startIndex, to: $0) }
            self = .reader(problem: problem, offset: offset, value: parser.problem_value, yaml: yaml)
        case YAML_SCANNER_ERROR: self = .scanner(context: context, problem: problem, mark(parser.problem_mark), yaml: yaml)
        case YAML_PARSER_ERROR: self = .parser(context: context, problem: problem, mark(parser.problem_mark), yaml: yaml)
        case YAML_COMPOSER_ERROR: self = .composer(context: context, problem: problem, mark(parser.problem_mark), yaml: yaml)
        default: self = .memory  // YAML_MEMORY_ERROR; the emitter's errors do not happen while parsing
        }
    }
}
