import PinpathAgent

/// The agent's YAML configuration (``AgentConfiguration``), on the fuzz bytes as the text of a file.
///
/// Promises checked: the text loads or is refused with at least one ``ConfigurationProblem``; each problem
/// names the file and a line and column inside the text (lines broken as libyaml
/// breaks them, columns in Unicode scalars as libyaml counts them), and reads `file:line:column: …`.
enum ConfigurationCheck {
    static let file = "fuzz.yaml"
    /// Relative paths in the text point nowhere, so that the check reads no file of this machine by accident.
    static let baseDirectory = "/nonexistent/pinpath-fuzz"
    static let environment = ["PINPATH_FUZZ_TOKEN": "fuzz-token"]

    static func check(_ bytes: [UInt8]) throws(InvariantViolation) {
        // Invalid UTF-8 is refused by `load` before parsing; here it becomes U+FFFD so the parser still runs.
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            _ = try AgentConfiguration.parse(yaml: text, file: file, baseDirectory: baseDirectory, environment: environment)
        } catch {
            try require(!error.problems.isEmpty, "\(excerpt(text)) was refused with no problem")
            let lines = libyamlLines(text)
            for problem in error.problems {
                try checkPosition(problem, lines: lines, text: text)
            }
        }
    }

    private static func checkPosition(_ problem: ConfigurationProblem, lines: [Int], text: String) throws(InvariantViolation) {
        let context = "\(excerpt(text)): \(excerpt(problem.description))"
        try require(problem.file == file && !problem.message.isEmpty, "\(context): no file or no message")
        // Text, not a file: nothing can be wrong with the whole file, so every problem has a place.
        guard let line = problem.line, let column = problem.column else {
            throw InvariantViolation("\(context): no line and column")
        }
        // libyaml ends a stream that does not end with a line break on a line of its own: errors at the end
        // of such a text are on the line after its last, column 1.
        let endOfStream = line == lines.count + 1 && column == 1
        try require(line >= 1 && (line <= lines.count || endOfStream), "\(context): line \(line) of \(lines.count)")
        try require(
            column >= 1 && (endOfStream || column <= lines[line - 1] + 1),
            "\(context): column \(column) of a line of \(lines[line - 1]) characters")
        try require(
            problem.description.utf8.starts(with: "\(file):\(line):\(column): ".utf8), "\(context): does not start with file:line:column")
    }

    /// The length in Unicode scalars of each line, with libyaml's line breaks: CR LF, CR, LF, NEL, LS and PS.
    static func libyamlLines(_ text: String) -> [Int] {
        var lengths = [0]
        var previousWasCarriageReturn = false
        for scalar in text.unicodeScalars {
            defer { previousWasCarriageReturn = scalar == "\r" }
            switch scalar {
            case "\n" where previousWasCarriageReturn: continue
            case "\n", "\r", "\u{85}", "\u{2028}", "\u{2029}": lengths.append(0)
            default: lengths[lengths.count - 1] += 1
            }
        }
        return lengths
    }
}
