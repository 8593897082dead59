import FoundationEssentials
import Glibc
import PinpathReachability
import PinpathSecurity
import PinpathYAML

/// The agent's validated configuration (`etc/pinpath.yaml` is the commented example): every default
/// applied, every reference resolved, every file it names already read.
///
/// Load it with ``load(path:environment:)``. A configuration that loaded is complete: the agent never finds
/// a problem in it later, and a reload (SIGHUP) either yields a new one or a ``ConfigurationError`` listing
/// all the problems, while the old configuration keeps running.
public struct AgentConfiguration: Sendable {
    /// The file it was read from, as given.
    public let file: String
    /// Where events go and which probe results become events.
    public let events: EventsConfiguration
    /// The named security policies, in file order (the order matters when several match a host).
    public let policies: [PolicyConfiguration]
    /// The endpoints to probe, in file order.
    public let endpoints: [EndpointConfiguration]
    /// Extra reachability targets to watch (`reachability.targets`), besides the endpoints' hosts.
    public let reachabilityTargets: [ReachabilityTarget]
    /// The node_exporter textfile to write metrics to (`metrics.textfile`), resolved; `nil` for none.
    public let metricsTextfile: String?
    /// Where `/metrics`, `/healthz` and `/readyz` are served (`metrics.listen`); `nil` for nowhere (the default).
    public var metricsListen: MetricsListenAddress? = nil
    /// The proxies endpoints without a `proxy:` of their own go through (the top-level `proxy:`, else the
    /// environment's).
    public let proxy: ProxyConfiguration
    /// The connectivity check (`connectivity:`); `nil` when off (the default).
    public var connectivity: ConnectivityConfiguration? = nil
    /// What loaded but deserves a look (pins already expired), sorted by position; `check-config` prints these.
    public var warnings: [ConfigurationProblem] = []

    /// The policy named `name`.
    public func policy(named name: String) -> PolicyConfiguration? { policies.first { $0.name == name } }

    static let keys = ["events", "policies", "defaults", "endpoints", "include", "reachability", "metrics", "proxy", "connectivity"]

    /// Reads and validates the configuration file at `path`.
    ///
    /// Relative paths inside the file (certificates, `ca_file`, the events output, the metrics textfile) are
    /// resolved against the file's directory. Certificate and CA files are read now, with the caller's
    /// privileges: run `pinpath check-config` as the agent's user for a faithful answer.
    /// - Parameters:
    ///   - path: the YAML file; relative to the working directory when relative.
    ///   - environment: where `${NAME}` in header values is looked up; the process environment by default.
    /// - Throws: ``ConfigurationError`` with every problem found, each with file, line, column and key path.
    public static func load(
        path: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> AgentConfiguration {
        let bytes: [UInt8]
        do throws(FileReadError) {
            bytes = try readRegularFile(path)
        } catch {
            throw ConfigurationError(problems: [wholeFile(path, .unreadableFile, readFailure(error, "the file"))])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(problems: [wholeFile(path, .unreadableFile, "the file is not UTF-8 text")])
        }
        let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "."
        return try parse(yaml: text, file: path, baseDirectory: directory, environment: environment)
    }

    /// Validates YAML text; `file` names it in problems, `baseDirectory` anchors relative paths.
    /// `package` for the fuzz entry points (Tests/PinpathFuzzing), which feed it text without a file.
    package static func parse(
        yaml: String, file: String, baseDirectory: String, environment: [String: String]
    ) throws(ConfigurationError) -> AgentConfiguration {
        if let (line, column) = YAMLNestingLimit.firstTooDeep(in: yaml) {
            throw ConfigurationError(problems: [
                ConfigurationProblem(
                    file: file, line: line, column: column, keyPath: "", code: .syntax,
                    message:
                        "nested deeper than \(YAMLNestingLimit.maximumDepth) levels; the configuration needs 5 (is this the right file?)")
            ])
        }
        let document: Document?
        do {
            document = try Parser(yaml: yaml).singleDocument()
        } catch {
            // A key or an environment file given by mistake is named, not quoted.
            let problem =
                ForeignContent.description(of: yaml).map {
                    ConfigurationProblem(
                        file: file, line: 1, column: 1, keyPath: "", code: .syntax, message: "the file \($0), not YAML; \(wrongFile)")
                } ?? syntaxProblem(error, file: file, yaml: yaml)
            throw ConfigurationError(problems: [problem])
        }
        let root = document?.root
        if case .scalar = root, let root {
            let what = ForeignContent.description(of: yaml) ?? ForeignContent.description(of: root)
            throw ConfigurationError(problems: [
                ConfigurationProblem(
                    file: file, line: 1, column: 1, keyPath: "", code: .wrongType, message: "the file \(what); \(wrongFile)")
            ])
        }
        let decoder = ConfigurationDecoder(file: file, baseDirectory: baseDirectory, environment: environment)
        // An empty file is an empty configuration: the machine's own reachability is still reported.
        let fields = root.flatMap { decoder.mapping($0, "", known: keys) }

        let events = EventsConfiguration.decode(fields?["events"], decoder)
        let declared = fields?["policies"].flatMap { decoder.namedEntries($0, "policies") } ?? []
        let policies = declared.compactMap { PolicyConfiguration.decode(name: $0.name, key: $0.key, value: $0.value, decoder) }
        decoder.reportTrustStoreConflicts(policies, declared: declared)
        let proxy = ProxyConfiguration.decodeDefault(fields?["proxy"], decoder)
        let collectors = decoder.reportCollectors(policies, declared: declared, proxy: proxy)
        var context = EndpointConfiguration.Context(
            policies: policies, declaredPolicies: declared.map(\.name), collectors: collectors, proxy: proxy)
        let defaults = EndpointDefaults.decode(fields?["defaults"], decoder)
        let ownEndpoints =
            fields?["endpoints"].flatMap { decoder.list($0, "endpoints", of: "endpoints (mappings with name and url)") } ?? []
        let sources =
            [EndpointSource(file: file, endpoints: ownEndpoints, trust: .mainFile, written: document?.written ?? .zero)]
            + (fields?["include"].map { includedEndpoints($0, decoder) } ?? [])
        // Refused defaults leave no endpoint to read: each would only report what the defaults gave it.
        let applications =
            defaults.applications(
                to: sources, written: sources.reduce(.zero) { $0 + $1.written }, policies: policies, at: fields?["defaults"],
                decoder) ?? []
        var endpoints: [EndpointConfiguration] = []
        for (source, applied) in zip(sources, applications) {
            decoder.file = source.file
            if case .included = source.trust { decoder.readingIncludedFile = true }
            for (index, (node, application)) in zip(source.endpoints, applied).enumerated() {
                let keyPath = "endpoints[\(index)]"
                decoder.inherited = (keyPath, application.inherited)
                decoder.warnWithheld(application.withheld, at: node, keyPath)
                if var endpoint = EndpointConfiguration.decode(application.node, keyPath, &context, decoder) {
                    endpoint.withheldDefaults = application.withheld.map(\.key)
                    endpoints.append(endpoint)
                }
            }
            decoder.inherited = nil
            decoder.readingIncludedFile = false
        }
        decoder.file = file
        let endpointNodes = sources.flatMap(\.endpoints)
        let targets = fields?["reachability"].map { decoder.reachabilityTargets($0) } ?? []
        let metrics = fields?["metrics"].map { decoder.metrics($0) }
        let connectivity = fields?["connectivity"].flatMap { ConnectivityConfiguration.decode($0, policies: policies, decoder) }
        if endpointNodes.isEmpty && targets.isEmpty {
            decoder.warn(
                .nothingToMonitor, at: fields?["endpoints"], "endpoints",
                "no endpoints and no reachability targets: the agent would only report this machine's own path")
        }

        guard decoder.problems.isEmpty else { throw ConfigurationError(problems: decoder.problems) }
        return AgentConfiguration(
            file: file, events: events, policies: policies, endpoints: endpoints, reachabilityTargets: targets,
            metricsTextfile: metrics?.textfile, metricsListen: metrics?.listen, proxy: proxy, connectivity: connectivity,
            warnings: ConfigurationError(problems: decoder.warnings).problems)
    }

    private static let wrongFile = "nothing from it is shown (is this the right file?)"

    /// Why a configuration file (`what`: "the file", "the included file") could not be read, without its path
    /// (the problem names it): errno's words, or what the path is when it is not a regular file.
    static func readFailure(_ error: FileReadError, _ what: String) -> String {
        switch error.failure {
        case .open(let code), .read(let code): "cannot read \(what): \(String(cString: strerror(code)))"
        case .tooLarge: "cannot read \(what): it is larger than \(maximumReadableFileSize >> 20) MiB"
        case .notRegularFile(let kind): "\(what) is \(kind.rawValue), not a regular file; nothing was read from it"
        }
    }

    static func wholeFile(_ path: String, _ code: ConfigurationProblem.Code, _ message: String) -> ConfigurationProblem {
        ConfigurationProblem(file: path, line: nil, column: nil, keyPath: "", code: code, message: message)
    }

    /// A Yams parse error as a problem at libyaml's position, in libyaml's words.
    static func syntaxProblem(_ error: any Error, file: String, yaml: String) -> ConfigurationProblem {
        switch error as? YamlError {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            if case .composer = error as? YamlError, problem == "but found another document" {
                return ConfigurationProblem(
                    file: file, line: mark.line, column: mark.column, keyPath: "", code: .syntax,
                    message: "a second YAML document starts here; the configuration is one document (remove the ---)")
            }
            let detail = context.map { " (\($0.text), line \($0.mark.line) column \($0.mark.column))" } ?? ""
            return ConfigurationProblem(
                file: file, line: mark.line, column: mark.column, keyPath: "", code: .syntax,
                message: "invalid YAML: \(problem)\(detail)")
        case .reader(let problem, _, _, _):
            // Yams gives the offset in Characters, where CR LF is one and a prepended mark hides the character
            // refused; the first scalar outside YAML's printable set is the one libyaml stopped at.
            let position = firstUnprintablePosition(yaml)
            return ConfigurationProblem(
                file: file, line: position?.line, column: position?.column, keyPath: "", code: .syntax,
                message: "invalid YAML: \(problem)")
        default:
            return ConfigurationProblem(file: file, line: nil, column: nil, keyPath: "", code: .syntax, message: "invalid YAML: \(error)")
        }
    }

    /// The line and column (from 1; columns in Unicode scalars, as libyaml counts them) of the first scalar
    /// that YAML does not allow in a stream (C0 and C1 controls but tab, LF, CR and NEL; U+FFFE, U+FFFF),
    /// with libyaml's line breaks: CR LF, CR, LF, NEL, LS and PS.
    private static func firstUnprintablePosition(_ text: String) -> (line: Int, column: Int)? {
        var line = 1
        var column = 1
        var previous: Unicode.Scalar?
        for scalar in text.unicodeScalars {
            defer { previous = scalar }
            switch scalar.value {
            case 0x0A where previous == "\r": continue
            case 0x0A, 0x0D, 0x85, 0x2028, 0x2029: (line, column) = (line + 1, 1)
            case 0x09, 0x20...0x7E, 0xA0...0xD7FF, 0xE000...0xFFFD, 0x10000...: column += 1
            default: return (line, column)
            }
        }
        return nil
    }
}

extension ConfigurationDecoder {
    /// `reachability: { targets: [...] }`: addresses or host names, each once.
    func reachabilityTargets(_ node: Node) -> [ReachabilityTarget] {
        guard let fields = mapping(node, "reachability", known: ["targets"]) else { return [] }
        var seen: Set<ReachabilityTarget> = []
        return elements(fields, "targets", of: "addresses or host names") { node, path in
            guard let target = parse(node, path, "an address or host name", { try ReachabilityTarget(parsing: $0) }) else { return nil }
            guard seen.insert(target).inserted else {
                report(.duplicate, at: node, path, "\(target) is already a target")
                return nil
            }
            return target
        }
    }

    /// `metrics: { textfile: …, listen: … }`: a node_exporter textfile, and where `/metrics` listens.
    func metrics(_ node: Node) -> (textfile: String?, listen: MetricsListenAddress?) {
        guard let fields = mapping(node, "metrics", known: ["textfile", "listen"]) else { return (nil, nil) }
        let textfile = fields["textfile"].flatMap { metricsTextfile($0, fields.path("textfile")) }
        let listen = fields["listen"].flatMap { value -> MetricsListenAddress? in
            let address = parse(value, fields.path("listen"), "an address:port or a Unix socket path") {
                try MetricsListenAddress(parsing: $0)
            }
            if case .unix(let path) = address { reportUnwritableDirectory(of: path, at: value, fields.path("listen")) }
            return address
        }
        return (textfile, listen)
    }

    /// `metrics.textfile`: a `.prom` file, the only name node_exporter's textfile collector reads.
    private func metricsTextfile(_ value: Node, _ keyPath: String) -> String? {
        guard let text = string(value, keyPath, "a file path") else { return nil }
        guard text.hasSuffix(".prom"), !text.hasSuffix("/.prom") else {
            report(
                .invalidValue, at: value, keyPath,
                "\(ConfigurationProblem.quoted(text)) does not end in .prom; node_exporter's textfile collector reads only *.prom files")
            return nil
        }
        let path = resolve(path: text)
        reportUnwritableDirectory(of: path, at: value, keyPath)
        return path
    }
}
