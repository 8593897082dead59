import FoundationEssentials
import Glibc
import PinpathSupport
import PinpathYAML

/// Walks the YAML nodes of one configuration file, turning them into values and collecting every problem
/// with its position instead of stopping at the first: a rejected reload must report them all.
///
/// Each reader returns `nil` after recording a problem, so callers just skip what could not be read.
final class ConfigurationDecoder {
    /// The file being read: the main one, or an included one while its endpoints are read.
    var file: String
    /// The main configuration file, where `defaults:` is written.
    let mainFile: String
    /// Key paths of the endpoint being read whose values came from `defaults:` (`endpoints[3].interval`,
    /// `endpoints[3].headers.X-Team`), with the endpoint's own key path: their problems are the defaults'.
    var inherited: (endpoint: String, keyPaths: [String])?
    /// Whether an included file's endpoints are being read: their own values may not read the environment or
    /// local files (the defaults they inherit are the main file's, and may).
    var readingIncludedFile = false
    /// The configuration file's directory: relative paths in the file are relative to it, not to the
    /// agent's working directory (systemd starts it in `/`).
    let baseDirectory: String
    let environment: [String: String]
    /// The moment the file is read: pins' `expires` dates are judged against it, once for the whole file.
    let now = Date()
    private(set) var problems: [ConfigurationProblem] = []
    /// What loads but deserves an operator's look (pins already expired); never a reason to refuse the file.
    private(set) var warnings: [ConfigurationProblem] = []
    /// ``problems`` and ``warnings`` as sets: a file of 20,000 bad items took a quadratic 17 s to check when
    /// each new problem was compared with every earlier one.
    private var reported: Set<ConfigurationProblem> = []
    /// Endpoint names seen so far in this load, with the file and node where: names are unique across files.
    var endpointNames: [String: (file: String, node: Node)] = [:]
    /// Each pattern compiled in this load, by its text, or why PCRE2 refused it: a pattern that `defaults:` gives
    /// 10,000 endpoints, or that aliases repeat, is compiled once (a 90 KB pattern takes PCRE2 0.1 s).
    private var patterns: [String: Result<BodyPattern, any Error>] = [:]

    init(file: String, baseDirectory: String, environment: [String: String]) {
        self.file = file
        self.mainFile = file
        self.baseDirectory = baseDirectory
        self.environment = environment
    }

    /// `source` compiled (``BodyPattern``), once per text in a load.
    func pattern(_ source: String) throws -> BodyPattern {
        if let known = patterns[source] { return try known.get() }
        let compiled = Result { try BodyPattern(source) }
        patterns[source] = compiled
        return try compiled.get()
    }

    /// Records a problem at `node`'s position (the document start when it has none).
    func report(_ code: ConfigurationProblem.Code, at node: Node?, _ keyPath: String, _ message: String) {
        let problem = makeProblem(code, at: node, keyPath, message)
        // A bad default would otherwise be reported once per endpoint that inherits it.
        if reported.insert(problem).inserted { problems.append(problem) }
    }

    /// The problem at `node` in the file being read, or at `defaults.…` in the main file when the value came
    /// from `defaults:`.
    private func makeProblem(_ code: ConfigurationProblem.Code, at node: Node?, _ keyPath: String, _ message: String)
        -> ConfigurationProblem
    {
        let mark = node?.mark
        var file = file
        var keyPath = keyPath
        if let inherited, isInherited(keyPath) {
            file = mainFile
            keyPath = "defaults" + keyPath.dropFirst(inherited.endpoint.count)
        }
        // Every value a message quotes is cut already; this bounds what other modules' messages quote, and
        // keeps a problem on one line whatever it holds.
        return ConfigurationProblem(
            file: file, line: mark?.line ?? 1, column: mark?.column ?? 1,
            keyPath: UntrustedText.escaped(keyPath, limit: ConfigurationProblem.maximumMessageLength), code: code,
            message: UntrustedText.escaped(message, limit: ConfigurationProblem.maximumMessageLength))
    }

    /// Whether the value at `keyPath` of the endpoint being read came from `defaults:`.
    func isInherited(_ keyPath: String) -> Bool {
        inherited?.keyPaths.contains { Self.keyPath(keyPath, isWithin: $0) } ?? false
    }

    /// Whether the value at `keyPath` was written in an included file (not inherited from the main file's
    /// `defaults:`), and so may not reach the environment or local files.
    func isWrittenInIncludedFile(_ keyPath: String) -> Bool {
        readingIncludedFile && !isInherited(keyPath)
    }

    /// Whether `keyPath` is `base` or below it (`base.key`, `base[0]`).
    private static func keyPath(_ keyPath: String, isWithin base: String) -> Bool {
        guard keyPath.hasPrefix(base) else { return false }
        let rest = keyPath.dropFirst(base.count)
        return rest.isEmpty || rest.hasPrefix(".") || rest.hasPrefix("[")
    }

    /// Records a problem made elsewhere (an included file that cannot be read or parsed).
    func record(_ problem: ConfigurationProblem) {
        if reported.insert(problem).inserted { problems.append(problem) }
    }

    /// Records a warning at `node`'s position: `check-config` prints it, the agent reports it in `agent.started` and
    /// `config.reloaded`.
    func warn(_ code: ConfigurationProblem.Code, at node: Node?, _ keyPath: String, _ message: String) {
        let warning = makeProblem(code, at: node, keyPath, message)
        if reported.insert(warning).inserted { warnings.append(warning) }
    }

    /// `path` as given when absolute, otherwise under the configuration file's directory.
    func resolve(path: String) -> String {
        if path.hasPrefix("/") || baseDirectory == "." { return path }
        return baseDirectory.hasSuffix("/") ? baseDirectory + path : "\(baseDirectory)/\(path)"
    }

    /// Reports a file the agent will create (`path`, as given at `node`) in a directory it cannot create it in:
    /// missing, not a directory, or not writable by this user (`check-config` runs as the agent's user).
    func reportUnwritableDirectory(of path: String, at node: Node, _ keyPath: String) {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var status = stat()
        let problem: String? =
            if stat(directory, &status) != 0 {
                "the directory \(directory) does not exist (create it, writable by the agent's user)"
            } else if status.st_mode & S_IFMT != S_IFDIR {
                "\(directory) is not a directory"
            } else if access(directory, W_OK) != 0 {
                "the directory \(directory) is not writable by this user (uid \(getuid())); run check-config as the agent's user"
            } else {
                nil
            }
        if let problem { report(.unwritableDirectory, at: node, keyPath, problem) }
    }

    // MARK: Typed readers

    /// A mapping whose keys are all in `known`; unknown keys (with the closest known one suggested) and
    /// duplicates are reported, and the mapping is still read so that its other problems surface too.
    func mapping(_ node: Node, _ keyPath: String, known: [String]) -> ConfigurationMapping? {
        guard case .mapping(let mapping) = node else {
            report(.wrongType, at: node, keyPath, "expected a mapping (key: value lines), found \(kind(of: node))")
            return nil
        }
        var fields = ConfigurationMapping(keyPath: keyPath, node: node)
        for (key, value) in entries(of: mapping, keyPath) {
            if key.text == "<<" {
                // PinpathYAML composes nodes without applying YAML 1.1 merge keys, so `<<` would be silently wrong.
                report(
                    .unknownKey, at: key.node, fields.path(key.text),
                    "merge keys (<<) are not supported; repeat the keys, or use an alias (*name) for a whole value")
                continue
            }
            guard known.contains(key.text) else {
                // A likely typo gets the one suggestion; otherwise the whole list, which is short.
                let hint =
                    Self.closest(to: key.text, among: known).map { "did you mean \"\($0)\"?" }
                    ?? "known keys: \(known.joined(separator: ", "))"
                report(.unknownKey, at: key.node, fields.path(key.text), "unknown key \(ConfigurationProblem.quoted(key.text)); \(hint)")
                continue
            }
            fields.values[key.text] = (key.node, value)
        }
        return fields
    }

    /// A mapping whose keys are names chosen by the user (policies, headers): each key once, in order.
    func namedEntries(_ node: Node, _ keyPath: String) -> [(name: String, key: Node, value: Node)]? {
        guard case .mapping(let mapping) = node else {
            report(.wrongType, at: node, keyPath, "expected a mapping (name: value lines), found \(kind(of: node))")
            return nil
        }
        return entries(of: mapping, keyPath).map { ($0.key.text, $0.key.node, $0.value) }
    }

    /// The pairs of a mapping with scalar keys, reporting other keys and repeated ones.
    private func entries(of mapping: Node.Mapping, _ keyPath: String) -> [(key: (text: String, node: Node), value: Node)] {
        var seen: [String: Node] = [:]
        var result: [(key: (text: String, node: Node), value: Node)] = []
        for (key, value) in mapping {
            guard case .scalar(let scalar) = key else {
                report(.wrongType, at: key, keyPath, "a key must be a plain name, found \(kind(of: key))")
                continue
            }
            if let first = seen[scalar.string] {
                let line = first.mark.map { " (first on line \($0.line))" } ?? ""
                report(
                    .duplicate, at: key, Self.keyPath(keyPath, scalar.string),
                    "the key \(ConfigurationProblem.quoted(scalar.string)) is given twice\(line)")
                continue
            }
            seen[scalar.string] = key
            result.append(((scalar.string, key), value))
        }
        return result
    }

    /// A list; a single value stands for a list of one when `single` allows it (`status: 200`).
    func list(_ node: Node, _ keyPath: String, of what: String, allowingSingle single: Bool = false) -> [Node]? {
        switch node {
        case .sequence(let sequence): return Array(sequence)
        case .scalar where single: return [node]
        default:
            report(.wrongType, at: node, keyPath, "expected a list of \(what), found \(kind(of: node))")
            return nil
        }
    }

    /// The value of a key that must be there, reporting it at the mapping when it is not.
    func required(_ fields: ConfigurationMapping, _ key: String, _ what: String) -> Node? {
        if let value = fields[key] { return value }
        report(.missingKey, at: fields.node, fields.keyPath, "\(key) is missing (\(what))")
        return nil
    }

    /// Text: any scalar (a number is read as its digits).
    func string(_ node: Node, _ keyPath: String, _ what: String) -> String? {
        guard case .scalar(let scalar) = node else {
            report(.wrongType, at: node, keyPath, "expected \(what), found \(kind(of: node))")
            return nil
        }
        return scalar.string
    }

    /// `true` or `false`. YAML 1.1's `yes`, `no`, `on` and `off` are refused: YAML 1.2 reads them as text,
    /// and a file should mean the same to every reader.
    func bool(_ node: Node, _ keyPath: String) -> Bool? {
        guard let text = string(node, keyPath, "true or false") else { return nil }
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default:
            report(.wrongType, at: node, keyPath, "expected true or false, found \(kind(of: node))")
            return nil
        }
    }

    /// A whole number in `range`.
    func integer(_ node: Node, _ keyPath: String, in range: ClosedRange<Int>) -> Int? {
        let what =
            range.upperBound == .max
            ? "a whole number, \(range.lowerBound) or more" : "a whole number from \(range.lowerBound) to \(range.upperBound)"
        guard let text = string(node, keyPath, what) else { return nil }
        guard let value = Int(text) else {
            report(.wrongType, at: node, keyPath, "expected \(what), found \(kind(of: node))")
            return nil
        }
        guard range.contains(value) else {
            report(.invalidValue, at: node, keyPath, "\(value) is out of range (expected \(what))")
            return nil
        }
        return value
    }

    /// A duration (``DurationSyntax``), at least `minimum`.
    func duration(_ node: Node, _ keyPath: String, atLeast minimum: Duration = .zero) -> Duration? {
        guard let text = string(node, keyPath, "a duration (like 30s)") else { return nil }
        let duration: Duration
        do {
            duration = try DurationSyntax.parse(text)
        } catch {
            report(.invalidValue, at: node, keyPath, error.message)
            return nil
        }
        guard duration >= minimum else {
            let bound = minimum == .milliseconds(1) ? "more than 0" : "at least \(DurationSyntax.format(minimum))"
            report(.invalidValue, at: node, keyPath, "\(text) is too short (it must be \(bound))")
            return nil
        }
        return duration
    }

    /// One of `choices` (enum raw values), naming them all when the text is none of them.
    func choice<T: RawRepresentable & CaseIterable>(_ node: Node, _ keyPath: String, _ type: T.Type) -> T?
    where T.RawValue == String {
        choice(node, keyPath, among: T.allCases.map(\.rawValue)).flatMap(T.init(rawValue:))
    }

    /// One of `names`, as written; a problem naming them (and the closest) otherwise.
    func choice(_ node: Node, _ keyPath: String, among names: [String]) -> String? {
        guard let text = string(node, keyPath, "one of \(names.joined(separator: ", "))") else { return nil }
        guard names.contains(text) else {
            var message = "\(ConfigurationProblem.quoted(text)) is not one of \(names.joined(separator: ", "))"
            if let close = Self.closest(to: text, among: names) { message += "; did you mean \"\(close)\"?" }
            report(.invalidValue, at: node, keyPath, message)
            return nil
        }
        return text
    }

    /// How a node reads in a message: `a list`, `a mapping`, or the scalar in quotes (its start only,
    /// ``ConfigurationProblem/quoted(_:)``).
    func kind(of node: Node) -> String {
        switch node {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let scalar): return scalar.string.isEmpty ? "nothing" : ConfigurationProblem.quoted(scalar.string)
        }
    }
}

/// The known keys of one mapping, read so far; absent and null values read the same (the default applies).
struct ConfigurationMapping {
    let keyPath: String
    /// The mapping itself, whose position is reported for a missing key.
    let node: Node
    var values: [String: (key: Node, value: Node)] = [:]
    /// The keys written but refused before reading (an included file's keys that read local files): nothing reads
    /// them, and what depends on them knows they were written.
    private(set) var withdrawn: Set<String> = []

    /// Refuses `key`'s value: it reads as absent from now on.
    mutating func withdraw(_ key: String) {
        if values.removeValue(forKey: key) != nil { withdrawn.insert(key) }
    }

    /// Whether `key` was written and withdrawn.
    func isWithdrawn(_ key: String) -> Bool { withdrawn.contains(key) }

    /// The value of `key`, or `nil` when it is absent or written as null (`key:`, `key: ~`, `key: null`).
    subscript(key: String) -> Node? {
        guard let value = values[key]?.value, !Self.isNull(value) else { return nil }
        return value
    }

    /// Whether `value` is YAML's null (`key:`, `key: ~`, `key: null`): the key then takes its default.
    static func isNull(_ value: Node) -> Bool {
        if case .scalar(let scalar) = value, scalar.style == .plain, ["", "~", "null", "Null", "NULL"].contains(scalar.string) {
            return true
        }
        return false
    }

    /// `endpoints[0].interval` for `interval`.
    func path(_ key: String) -> String { ConfigurationDecoder.keyPath(keyPath, key) }
}

extension ConfigurationDecoder {
    /// A key path extended by one key: `endpoints[0]` and `interval` make `endpoints[0].interval`.
    static func keyPath(_ base: String, _ key: String) -> String { base.isEmpty ? key : "\(base).\(key)" }

    /// The candidate nearest to `text` by edit distance, when it is near enough to be a typo.
    static func closest(to text: String, among candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(text.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, min(2, text.count / 3)) ? best.0 : nil
    }

    /// Levenshtein distance, over characters.
    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(Swift.min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
