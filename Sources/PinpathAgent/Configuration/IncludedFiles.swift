import FoundationEssentials
import Glibc
import PinpathSecurity
import PinpathYAML

/// One file's `endpoints:` items: the main file's, or an included file's.
struct EndpointSource {
    /// What a file's endpoints may reach of what the main file holds.
    enum Trust {
        /// The main file: its author holds the environment, the local files and the defaults' credentials.
        case mainFile
        /// An included file, written by someone trusted less (configuration management, a service team): its
        /// endpoints read neither the environment nor local files, and get the main file's credential defaults
        /// only for the hosts `include` scopes them to (`credentials_for`).
        case included(credentialsFor: [HostPattern])
    }

    /// The file, as named in problems: the main file as given, an included one as its pattern matched it.
    let file: String
    /// The items of its `endpoints:` list, not yet read.
    let endpoints: [Node]
    /// What its endpoints may reach.
    let trust: Trust
    /// What the file's text writes (aliases not expanded): what the defaults' copies are bounded by.
    let written: TreeSize
}

extension AgentConfiguration {
    /// The files `include:` names, each read for its `endpoints:`, in sorted order per pattern, each file once
    /// (the first entry matching it decides its `credentials_for`).
    ///
    /// `include:` is one glob pattern, a list of them (relative to the main file's directory), or
    /// `{files: patterns, credentials_for: host patterns}` (alone or as items of the list): the hosts to which the
    /// main file's credential defaults (secret headers, client certificates, `body_file`) may go from these
    /// files' endpoints. The plain forms scope nothing.
    ///
    /// Configuration management drops one file per service into a directory (`include: conf.d/*.yaml`). An
    /// included file holds `endpoints:` only: policies, defaults and everything else stay in the main file, where
    /// a reviewer of security settings finds them all. Included files cannot include others (one level). A
    /// pattern that matches no file is a warning: an empty `conf.d` is a normal state.
    static func includedEndpoints(_ node: Node, _ decoder: ConfigurationDecoder) -> [EndpointSource] {
        var seen: Set<String> = []
        var sources: [EndpointSource] = []
        let mainFile = fileIdentity(decoder.mainFile)
        for entry in includeEntries(node, decoder) {
            guard !entry.pattern.isEmpty else {
                decoder.report(.invalidValue, at: entry.node, entry.keyPath, "the pattern is empty (write one like conf.d/*.yaml)")
                continue
            }
            let matches: [String]
            switch glob(decoder.resolve(path: entry.pattern)) {
            case .success(let paths): matches = paths
            case .failure(let failure):
                decoder.report(.unreadableFile, at: entry.node, entry.keyPath, failure.message)
                continue
            }
            if matches.isEmpty {
                decoder.warn(
                    .nothingIncluded, at: entry.node, entry.keyPath,
                    "\(ConfigurationProblem.quoted(entry.pattern)) matches no file; no endpoints included from it")
            }
            // `include: "*.yaml"` beside the main file matches it: it is read once, as the main file.
            for path in matches where seen.insert(path).inserted && (mainFile == nil || fileIdentity(path) != mainFile) {
                if let (endpoints, written) = readIncluded(path, decoder) {
                    sources.append(
                        EndpointSource(
                            file: path, endpoints: endpoints, trust: .included(credentialsFor: entry.credentialsFor),
                            written: written))
                }
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

    /// One pattern of `include:`, where it is written, and the hosts its files may have credentials for.
    private struct IncludeEntry {
        let node: Node
        let keyPath: String
        let pattern: String
        let credentialsFor: [HostPattern]
    }

    /// The patterns of `include:` in its three forms: a pattern, a list, a `{files:, credentials_for:}` mapping
    /// (alone or in the list).
    private static func includeEntries(_ node: Node, _ decoder: ConfigurationDecoder) -> [IncludeEntry] {
        switch node {
        case .mapping: return scopedEntries(node, "include", decoder)
        case .scalar: return pattern(node, "include", scope: [], decoder).map { [$0] } ?? []
        case .sequence(let items):
            return items.enumerated().flatMap { index, item -> [IncludeEntry] in
                let keyPath = "include[\(index)]"
                if case .mapping = item { return scopedEntries(item, keyPath, decoder) }
                return pattern(item, keyPath, scope: [], decoder).map { [$0] } ?? []
            }
        }
    }

    /// `{files: conf.d/*.yaml, credentials_for: [api.example.com]}`: `files` one pattern or a list, and
    /// `credentials_for` host patterns in the policies' syntax (`*.x` one label, `**.x` any).
    private static func scopedEntries(_ node: Node, _ keyPath: String, _ decoder: ConfigurationDecoder) -> [IncludeEntry] {
        guard let fields = decoder.mapping(node, keyPath, known: ["files", "credentials_for"]) else { return [] }
        var scope: [HostPattern] = []
        if let hosts = fields["credentials_for"] {
            let path = fields.path("credentials_for")
            let items = decoder.list(hosts, path, of: "host patterns (api.example.com, *.internal.example)", allowingSingle: true) ?? []
            scope = items.enumerated().compactMap { index, item in
                decoder.parse(item, isSequence(hosts) ? "\(path)[\(index)]" : path, "a host pattern") { try HostPattern(parsing: $0) }
            }
        }
        guard let files = decoder.required(fields, "files", "file patterns such as conf.d/*.yaml") else { return [] }
        let path = fields.path("files")
        let items = decoder.list(files, path, of: "file patterns (conf.d/*.yaml)", allowingSingle: true) ?? []
        return items.enumerated().compactMap { index, item in
            pattern(item, isSequence(files) ? "\(path)[\(index)]" : path, scope: scope, decoder)
        }
    }

    private static func pattern(_ node: Node, _ keyPath: String, scope: [HostPattern], _ decoder: ConfigurationDecoder)
        -> IncludeEntry?
    {
        decoder.string(node, keyPath, "a file pattern (conf.d/*.yaml)").map {
            IncludeEntry(node: node, keyPath: keyPath, pattern: $0, credentialsFor: scope)
        }
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

    /// One included file's endpoint items and the nodes its text writes; its problems name it, and never quote
    /// what it holds: a pattern that matches an environment file or a key must not copy the secret into
    /// `check-config` and `config.rejected`.
    private static func readIncluded(_ path: String, _ decoder: ConfigurationDecoder) -> (endpoints: [Node], written: TreeSize)? {
        let mainFile = decoder.file
        decoder.file = path
        defer { decoder.file = mainFile }
        let document: Document?
        do throws(ConfigurationError) {
            document = try ConfigurationDocument.compose(
                ConfigurationDocument.text(of: path, as: .included), file: path, as: .included)
        } catch {
            error.problems.forEach(decoder.record)
            return nil
        }
        // An empty file (a service with nothing to probe yet) includes nothing.
        guard let document, case .mapping(let mapping) = document.root else { return ([], .zero) }
        for (key, _) in mapping where key.string == "include" {
            decoder.report(
                .invalidValue, at: key, "include",
                "an included file cannot include others (one level); move the pattern to \(mainFile)")
        }
        let rest = Node.mapping(Node.Mapping(mapping.filter { $0.key.string != "include" }.map { ($0.key, $0.value) }, mapping.mark))
        guard let fields = decoder.mapping(rest, "", known: ["endpoints"]) else { return nil }
        let endpoints = fields["endpoints"].flatMap { decoder.list($0, "endpoints", of: "endpoints (mappings with name and url)") }
        return (endpoints ?? [], document.written)
    }
}
