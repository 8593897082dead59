import PinpathYAML

/// `${NAME}` in a value: read from the agent's environment when the configuration is read, which only the main
/// file may do. Header values, a client key's password and a proxy's credentials use it.
extension ConfigurationDecoder {
    /// Whether `template` may read the environment: not in an included file's own values, where `${…}` is
    /// refused (reported here) before any variable is looked up.
    func refuseEnvironmentInIncludedFile(_ template: String, _ node: Node, _ keyPath: String) -> Bool {
        guard template.contains("${"), isWrittenInIncludedFile(keyPath) else { return true }
        report(
            .notInIncludedFile, at: node, keyPath,
            """
            ${…} reads the agent's environment, which only \(mainFile) may: an included file could send it anywhere; \
            move this endpoint to \(mainFile) (a header can instead be a default there, scoped to this endpoint's host \
            by include's credentials_for)
            """)
        return false
    }

    /// Replaces each `${NAME}` with the environment's value (as `encodingValue` writes it), reporting unset
    /// variables by name (never a value) and malformed references. `$` not followed by `{` is kept as it is. An
    /// included file's own values may not read the environment: that is refused before any variable is looked up.
    func expand(
        _ template: String, _ node: Node, _ keyPath: String, encodingValue: (String) -> String = { $0 }
    ) -> (String, [String])? {
        guard refuseEnvironmentInIncludedFile(template, node, keyPath) else { return nil }
        var result = ""
        var variables: [String] = []
        var rest = Substring(template)
        var failed = false
        while let start = rest.firstRange(of: "${") {
            result += rest[..<start.lowerBound]
            rest = rest[start.upperBound...]
            guard let end = rest.firstIndex(of: "}") else {
                report(.invalidValue, at: node, keyPath, "\"${\" has no closing \"}\" (write ${NAME})")
                return nil
            }
            let name = String(rest[..<end])
            rest = rest[rest.index(after: end)...]
            guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic),
                name.unicodeScalars.allSatisfy({ $0 == "_" || ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0) })
            else {
                report(
                    .invalidValue, at: node, keyPath,
                    "\"${\(name)}\" is not an environment variable reference (letters, digits and _, not starting with a digit)")
                failed = true
                continue
            }
            variables.append(name)
            if let value = environment[name] {
                result += encodingValue(value)
            } else {
                report(
                    .missingEnvironmentVariable, at: node, keyPath,
                    """
                    the environment variable \(name) is not set (give it to pinpath, for example with systemd's Environment= or \
                    EnvironmentFile=)
                    """
                )
                failed = true
            }
        }
        result += rest
        return failed ? nil : (result, variables)
    }
}
