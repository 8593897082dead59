import FoundationEssentials
import Glibc
import PinpathYAML

/// One file's `endpoints:` items: the main file's, or an included file's.
struct EndpointSource {
    /// The file, as named in problems: the main file as given, an included one as its pattern matched it.
    let file: String
    /// The items of its `endpoints:` list, not yet read.
    let endpoints: [Node]
}

extension AgentConfiguration {
    /// The files `include:` names (one glob pattern or a list of them, relative to the main file's directory),
    /// each read for its `endpoints:`, in sorted order per pattern, each file once.
    ///
    /// Configuration management drops one file per service into a directory (`include: conf.d/*.yaml`). An
    /// included file holds `endpoints:` only: policies, defaults and everything else stay in the main file, where
    /// a reviewer of security settings finds them all. Included files cannot include others (one level). A
    /// pattern that matches nothing is a warning: an empty `conf.d` is a normal state.
    static func includedEndpoints(_ node: Node, _ decoder: ConfigurationDecoder) -> [EndpointSource] {
        guard let patterns = decoder.list(node, "include", of: "file patterns (conf.d/*.yaml)", allowingSingle: true) else {
            return []
        }
        var seen: Set<String> = []
        var sources: [EndpointSource] = []
        let mainFile = fileIdentity(decoder.mainFile)
        for (index, patternNode) in patterns.enumerated() {
            let keyPath = isSequence(node) ? "include[\(index)]" : "include"
            guard let pattern = decoder.string(patternNode, keyPath, "a file pattern (conf.d/*.yaml)") else { continue }
            guard !pattern.isEmpty else {
                decoder.report(.invalidValue, at: patternNode, keyPath, "the pattern is empty (write one like conf.d/*.yaml)")
                continue
            }
            let resolved = decoder.resolve(path: pattern)
            let matches: [String]
            switch glob(resolved) {
            case .success(let paths): matches = paths
            case .failure(let failure):
                decoder.report(.unreadableFile, at: patternNode, keyPath, failure.message)
                continue
            }
            if matches.isEmpty {
                decoder.warn(
                    .nothingIncluded, at: patternNode, keyPath,
                    "\(ConfigurationProblem.quoted(pattern)) matches no file; no endpoints included from it")
            }
            // `include: "*.yaml"` beside the main file matches it: it is read once, as the main file.
            for path in matches where seen.insert(path).inserted && (mainFile == nil || fileIdentity(path) != mainFile) {
                if let source = readIncluded(path, decoder) { sources.append(source) }
            }
        }
        return sources
    }

    /// The device and inode of `path`, which name one file however the path spells it; `nil` when it cannot be
    /// stat'ed.
    private static func fileIdentity(_ path: String) -> [UInt64]? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return [UInt64(status.st_dev), UInt64(status.st_ino)]
    }

    private static func isSequence(_ node: Node) -> Bool {
        if case .sequence = node { true } else { false }
    }

    /// glob(3)'s matches, sorted (glob sorts unless told not to); a message when the search itself failed.
    private static func glob(_ pattern: String) -> Result<[String], GlobFailure> {
        var found = glob_t()
        defer { globfree(&found) }
        switch Glibc.glob(pattern, 0, nil, &found) {
        case 0:
            return .success((0..<Int(found.gl_pathc)).compactMap { found.gl_pathv[$0].map { String(cString: $0) } })
        case GLOB_NOMATCH:
            return .success([])
        case GLOB_NOSPACE:
            return .failure(GlobFailure(message: "out of memory while matching \(ConfigurationProblem.quoted(pattern))"))
        default:
            return .failure(GlobFailure(message: "cannot read a directory while matching \(ConfigurationProblem.quoted(pattern))"))
        }
    }

    private struct GlobFailure: Error {
        let message: String
    }

    /// One included file's endpoint items; its problems name it, and never quote what it holds: a pattern that
    /// matches an environment file or a key must not copy the secret into `check-config` and `config.rejected`.
    private static func readIncluded(_ path: String, _ decoder: ConfigurationDecoder) -> EndpointSource? {
        let mainFile = decoder.file
        decoder.file = path
        defer { decoder.file = mainFile }
        let bytes: [UInt8]
        do throws(FileReadError) {
            bytes = try readRegularFile(path)
        } catch {
            decoder.record(wholeFile(path, .unreadableFile, readFailure(error, "the included file")))
            return nil
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            decoder.record(
                wholeFile(path, .unreadableFile, "the included file is not UTF-8 text (a binary file?); nothing from it is shown"))
            return nil
        }
        if let (line, column) = YAMLNestingLimit.firstTooDeep(in: text) {
            decoder.record(
                ConfigurationProblem(
                    file: path, line: line, column: column, keyPath: "", code: .syntax,
                    message: "nested deeper than \(YAMLNestingLimit.maximumDepth) levels; an included file needs 4"))
            return nil
        }
        let root: Node?
        do {
            root = try Parser(yaml: text).singleRoot()
        } catch {
            decoder.record(
                ForeignContent.description(of: text).map { wholeFile(path, .syntax, "the included file \($0); \(notEndpoints)") }
                    ?? syntaxProblem(error, file: path, yaml: text))
            return nil
        }
        // An empty file (a service with nothing to probe yet) includes nothing.
        guard let root else { return EndpointSource(file: path, endpoints: []) }
        guard case .mapping(let mapping) = root else {
            let what = ForeignContent.description(of: text) ?? ForeignContent.description(of: root)
            decoder.record(wholeFile(path, .wrongType, "the included file \(what); \(notEndpoints)"))
            return nil
        }
        for (key, _) in mapping where key.string == "include" {
            decoder.report(
                .invalidValue, at: key, "include",
                "an included file cannot include others (one level); move the pattern to \(mainFile)")
        }
        let rest = Node.mapping(Node.Mapping(mapping.filter { $0.key.string != "include" }.map { ($0.key, $0.value) }, mapping.mark))
        guard let fields = decoder.mapping(rest, "", known: ["endpoints"]) else { return nil }
        let endpoints =
            fields["endpoints"].flatMap { decoder.list($0, "endpoints", of: "endpoints (mappings with name and url)") } ?? []
        return EndpointSource(file: path, endpoints: endpoints)
    }

    private static let notEndpoints =
        "an included file is YAML with endpoints: (check that the include pattern matches only those); nothing from it is shown"
}
