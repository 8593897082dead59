import Glibc
import PinpathSupport
import PinpathYAML

/// Reads a configuration file, main or included, the one way: whole through `readRegularFile` (a regular file of
/// at most 64 MiB), as UTF-8, then composed by PinpathYAML within its limits (nesting depth, what aliases may
/// expand to). Each step fails with the same message for both kinds of file, but for the words naming the file
/// and what it should hold.
///
/// A file that is not configuration (a key, an environment file matched by a pattern) is named by what it looks
/// like and never quoted: see ``ForeignContent``.
enum ConfigurationDocument {
    /// Which file is read: the wording of its problems.
    enum Role {
        /// The file given to `load` (or text given to `parse`): problems about its content have a position, 1:1
        /// for the whole text.
        case main
        /// A file an `include:` pattern matched: problems about it as a whole name only the file.
        case included

        /// How problems name the file.
        var noun: String {
            switch self {
            case .main: "the file"
            case .included: "the included file"
            }
        }

        /// What the file needs, after a refusal of its nesting.
        var depthNeeded: String {
            switch self {
            case .main: "the configuration needs 5 (is this the right file?)"
            case .included: "an included file needs 4"
            }
        }

        /// Whether a document with this root is refused whole: a scalar for either (a key, a word: not
        /// configuration); for an included file also a list, as it holds `endpoints:` and nothing else. The main
        /// file's list is refused by the decoder, at its position, as the wrong type for the configuration.
        func refuses(_ root: Node) -> Bool {
            switch (self, root) {
            case (_, .scalar), (.included, .sequence): true
            case (.main, .sequence), (_, .mapping): false
            }
        }

        /// What to do about a file whose content is not configuration at all.
        var nothingShown: String {
            switch self {
            case .main: "nothing from it is shown (is this the right file?)"
            case .included:
                "an included file is YAML with endpoints: (check that the include pattern matches only those); nothing from it is shown"
            }
        }
    }

    /// The text of the file at `path`.
    /// - Throws: ``ConfigurationError`` with one problem: the file cannot be read, or is not UTF-8 text.
    static func text(of path: String, as role: Role) throws(ConfigurationError) -> String {
        let bytes: [UInt8]
        do throws(FileReadError) {
            bytes = try readRegularFile(path)
        } catch {
            throw ConfigurationError(problems: [wholeFile(path, .unreadableFile, readFailure(error, role.noun))])
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(problems: [
                wholeFile(path, .unreadableFile, "\(role.noun) is not UTF-8 text (a binary file?); nothing from it is shown")
            ])
        }
        return text
    }

    /// The one YAML document `text` holds; `nil` for none (an empty file). `file` names the text in problems.
    /// - Throws: ``ConfigurationError`` with one problem: nested too deep, not YAML (named by what it looks like
    ///   when it looks like a key or an environment file), or a root the role refuses (``Role/refuses(_:)``).
    static func compose(_ text: String, file: String, as role: Role) throws(ConfigurationError) -> Document? {
        let document: Document?
        do throws(YamlError) {
            document = try Parser(yaml: text).singleDocument()
        } catch {
            if case .tooDeep(let limit, let mark, _) = error {
                throw ConfigurationError(problems: [
                    ConfigurationProblem(
                        file: file, line: mark.line, column: mark.column, keyPath: "", code: .syntax,
                        message: "nested deeper than \(limit) levels; \(role.depthNeeded)")
                ])
            }
            throw ConfigurationError(problems: [
                ForeignContent.description(of: text).map {
                    problem(file, role, .syntax, "\(role.noun) \($0), not YAML; \(role.nothingShown)")
                }
                    ?? syntaxProblem(error, file: file, yaml: text)
            ])
        }
        if let root = document?.root, role.refuses(root) {
            let what = ForeignContent.description(of: text) ?? ForeignContent.description(of: root)
            throw ConfigurationError(problems: [problem(file, role, .wrongType, "\(role.noun) \(what); \(role.nothingShown)")])
        }
        return document
    }

    /// A problem with the whole of the content: at 1:1 in the main text (every problem of a text has a place), on
    /// the file alone for an included one.
    private static func problem(_ file: String, _ role: Role, _ code: ConfigurationProblem.Code, _ message: String)
        -> ConfigurationProblem
    {
        switch role {
        case .main: ConfigurationProblem(file: file, line: 1, column: 1, keyPath: "", code: code, message: message)
        case .included: wholeFile(file, code, message)
        }
    }

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

    /// A parse error as a problem at libyaml's position, in libyaml's words.
    static func syntaxProblem(_ error: any Error, file: String, yaml: String) -> ConfigurationProblem {
        switch error as? YamlError {
        case .secondDocument(let mark, _):
            return ConfigurationProblem(
                file: file, line: mark.line, column: mark.column, keyPath: "", code: .syntax,
                message: "a second YAML document starts here; the configuration is one document (remove the ---)")
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let detail = context.map { " (\($0.text), line \($0.mark.line) column \($0.mark.column))" } ?? ""
            return ConfigurationProblem(
                file: file, line: mark.line, column: mark.column, keyPath: "", code: .syntax,
                message: "invalid YAML: \(problem)\(detail)")
        case .reader(let problem, _, _, _):
            // PinpathYAML gives the offset in Characters, where CR LF is one and a prepended mark hides the character
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
