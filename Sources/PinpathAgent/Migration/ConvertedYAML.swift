/// YAML that a converter writes: values it made itself (durations, booleans, numbers) written plain, and text that
/// came from the file it converts always double-quoted and escaped, so that a name with `: `, a newline, a quote
/// or a control character reads back as the same text and can never start a key, a comment or a document.
enum ConvertedYAML {
    /// A value to write.
    indirect enum Value {
        /// A token the converter made (`5s`, `true`, `200`): written as it is.
        case plain(String)
        /// Text from outside: written double-quoted (``quoted(_:)``).
        case text(String)
        /// A list of scalars, written in flow style (`[200, 201]`).
        case list([Value])
        /// A mapping, written in block style below its key; keys are text from outside, so quoted.
        case mapping([(key: String, value: Value)])
    }

    /// One entry of a mapping: comment lines first, then the key and its value (none for a comment alone).
    struct Entry {
        var comments: [String] = []
        var key: String?
        var value: Value?
    }

    /// `text` as a YAML double-quoted scalar: `"` and `\` escaped, line breaks, controls, bidi formatting scalars,
    /// U+2028, U+2029 and U+FEFF written as escapes, so that the line holds the whole value and shows it plainly.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where needsEscape(scalar): result += escape(scalar)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// Comment text: one line, with anything from outside already quoted by the caller; line breaks are escaped
    /// here as well, so that no text can end the comment.
    static func comment(_ text: String, indent: Int) -> String {
        let oneLine = text.unicodeScalars.map { needsEscape($0) ? escape($0) : String($0) }.joined()
        return String(repeating: " ", count: indent) + "# " + oneLine
    }

    /// The lines of `entries` as a block mapping indented by `indent` spaces.
    static func lines(_ entries: [Entry], indent: Int) -> [String] {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        for entry in entries {
            lines += entry.comments.map { comment($0, indent: indent) }
            guard let key = entry.key, let value = entry.value else { continue }
            switch value {
            case .mapping(let pairs):
                lines.append("\(pad)\(keyText(key)):\(pairs.isEmpty ? " {}" : "")")
                lines += self.lines(pairs.map { Entry(key: $0.key, value: $0.value) }, indent: indent + 2)
            default:
                lines.append("\(pad)\(keyText(key)): \(scalarText(value))")
            }
        }
        return lines
    }

    /// A key: plain when it reads as a word of pinpath's keys (a lower-case letter, then letters, digits and `_`)
    /// and as no other YAML value, else quoted.
    private static func keyText(_ key: String) -> String {
        let scalars = key.unicodeScalars
        let isWord =
            scalars.first.map { ("a"..."z").contains($0) } == true
            && scalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
        return isWord && !valueWords.contains(key) ? key : quoted(key)
    }

    /// Words YAML 1.1 or 1.2 reads as a boolean or null when plain.
    private static let valueWords: Set = ["true", "false", "null", "yes", "no", "on", "off", "y", "n"]

    private static func scalarText(_ value: Value) -> String {
        switch value {
        case .plain(let token): token
        case .text(let text): quoted(text)
        case .list(let items): "[" + items.map(scalarText).joined(separator: ", ") + "]"
        case .mapping: "{}"
        }
    }

    /// C0 and C1 controls, DEL, bidi formatting scalars, the Unicode line and paragraph separators (line breaks to
    /// YAML) and the byte-order mark.
    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF: true
        default: false
        }
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let (prefix, width) = scalar.value <= 0xFF ? ("\\x", 2) : ("\\u", 4)
        return prefix + String(repeating: "0", count: width - hex.count) + hex
    }
}
