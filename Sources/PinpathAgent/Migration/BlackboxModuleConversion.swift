import PinpathYAML

/// Converts blackbox_exporter's configuration (`modules:` of probers) into pinpath's `modules:` YAML, with the
/// `policies:` those modules need: what `pinpath modules --from-blackbox FILE` prints.
///
/// The http and tcp probers' options that mean the same thing in pinpath are converted; every other option gets a
/// comment at its module saying why it was not, and modules of other probers (icmp, dns, grpc, unix, websocket)
/// are skipped with a comment. A secret (a password, a token, a credential header's value) is never copied:
/// its header reads an environment variable instead, and a comment says which. Modules keep the file's order.
package enum BlackboxModuleConversion {
    /// Converts the blackbox_exporter configuration file at `path`.
    ///
    /// The file is read as a configuration file is (a regular file of at most 64 MiB, UTF-8, one YAML document
    /// within PinpathYAML's limits on nesting and aliases).
    /// - Throws: ``ConfigurationError`` naming the file and what was wrong (with a position for YAML and for a
    ///   structure that is not blackbox_exporter's: no `modules:` mapping, a module that is not a mapping).
    package static func convert(fileAt path: String) throws(ConfigurationError) -> String {
        try convert(yaml: ConfigurationDocument.text(of: path, as: .main), file: path)
    }

    /// Converts blackbox_exporter configuration text; `file` names it in problems and in the output's heading.
    package static func convert(yaml: String, file: String) throws(ConfigurationError) -> String {
        let document = try ConfigurationDocument.compose(yaml, file: file, as: .main)
        guard case .mapping(let root) = document?.root else {
            throw refusal(file, document?.root, "expected blackbox_exporter's configuration: a mapping with modules:")
        }
        guard let modulesNode = root["modules"] else {
            throw refusal(file, .mapping(root), "no modules: here; is this blackbox_exporter's configuration (blackbox.yml)?")
        }
        guard case .mapping(let modules) = modulesNode else {
            throw refusal(file, modulesNode, "modules: is not a mapping of module names to modules", at: "modules")
        }
        var names = ConversionNames()
        var entries: [ConvertedYAML.Entry] = []
        for (key, value) in modules {
            guard let name = key.string else { throw refusal(file, key, "a module's name must be text", at: "modules") }
            guard case .mapping(let module) = value else {
                throw refusal(file, value, "the module \(ConvertedYAML.quoted(name)) is not a mapping", at: "modules")
            }
            entries.append(BlackboxModule(name: name, fields: module).converted(&names))
        }
        var lines = [
            "# pinpath modules converted from the blackbox_exporter configuration \(ConvertedYAML.quoted(file)).",
            "# A comment names each blackbox option that was not converted, and why: read them before using this.",
        ]
        if !names.caFiles.isEmpty {
            lines.append("policies:")
            lines += ConvertedYAML.lines(
                names.caFiles.enumerated().map { index, caFile in
                    ConvertedYAML.Entry(
                        comments: ["blackbox's tls_config.ca_file: the chain is verified to this CA file only"],
                        key: ConversionNames.policyName(index),
                        value: .mapping([("mode", .plain("none")), ("ca_file", .text(caFile))]))
                }, indent: 2)
        }
        let converted = entries.contains { $0.key != nil }
        lines.append(converted ? "modules:" : "modules: {}")
        lines += ConvertedYAML.lines(entries, indent: 2)
        return lines.joined(separator: "\n") + "\n"
    }

    /// The problem of a file that is YAML but not blackbox_exporter's configuration, at `node`'s position.
    private static func refusal(_ file: String, _ node: Node?, _ message: String, at keyPath: String = "") -> ConfigurationError {
        ConfigurationError(problems: [
            ConfigurationProblem(
                file: file, line: node?.mark?.line ?? 1, column: node?.mark?.column ?? 1, keyPath: keyPath, code: .wrongType,
                message: message)
        ])
    }
}

/// What the converted modules share: the policies they name, one per distinct `ca_file` in the order first met,
/// and the environment variables their secrets are read from, so that two secrets never share one.
struct ConversionNames {
    private(set) var caFiles: [String] = []
    var environmentVariables: Set<String> = []

    /// The policy for `caFile`, added when new.
    mutating func policy(caFile: String) -> String {
        if let index = caFiles.firstIndex(of: caFile) { return Self.policyName(index) }
        caFiles.append(caFile)
        return Self.policyName(caFiles.count - 1)
    }

    static func policyName(_ index: Int) -> String { "blackbox-ca-\(index + 1)" }
}
