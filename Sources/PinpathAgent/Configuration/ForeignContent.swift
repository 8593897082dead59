import PinpathYAML

/// What a file that is not configuration seems to be, named instead of quoted.
///
/// An `include:` pattern that matches too much (`*`), or a `--config` pointing at the wrong file, reads an
/// environment file or a private key as YAML: such text is often a valid YAML scalar, and quoting it in a
/// problem copied the token or the key into `check-config` output and the `config.rejected` event. Problems
/// about such a file say what it looks like and never show its text.
enum ForeignContent {
    /// `looks like a PEM private key`, `looks like an environment file (NAME=value lines)`…; `nil` when the
    /// text looks like none of the files commonly found next to a configuration.
    static func description(of text: String) -> String? {
        if let begin = text.firstRange(of: "-----BEGIN ") {
            let label = text[begin.upperBound...].prefix { $0 != "-" && $0 != "\n" }
            if label.hasSuffix("PRIVATE KEY") { return "looks like a PEM private key" }
            if label.hasSuffix("CERTIFICATE") { return "looks like a PEM certificate" }
            return "looks like a PEM file"
        }
        let lines = text.split(whereSeparator: \.isNewline).map { $0.drop { $0 == " " || $0 == "\t" } }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        if !lines.isEmpty, lines.allSatisfy(isEnvironmentAssignment) {
            return "looks like an environment file (NAME=value lines)"
        }
        return nil
    }

    /// `NAME=value` or `export NAME=value`, as systemd's EnvironmentFile= and shells write them.
    private static func isEnvironmentAssignment(_ line: Substring) -> Bool {
        let assignment = line.hasPrefix("export ") ? line.dropFirst(7) : line
        guard let equals = assignment.firstIndex(of: "="), let first = assignment.first, first == "_" || first.isLetter else {
            return false
        }
        return assignment[..<equals].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
    }

    /// What a YAML root that is not a mapping is, for a file ``description(of:)`` does not recognize:
    /// `is a YAML list`, `is text`, never the text itself.
    static func description(of root: Node) -> String {
        switch root {
        case .mapping: "is a YAML mapping"
        case .sequence: "is a YAML list, not a mapping (key: value lines)"
        case .scalar: "is text, not a mapping (key: value lines)"
        }
    }
}
