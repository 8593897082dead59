/// Text that came from outside pinpath (a server, a certificate, a configuration file, the environment), made
/// safe to show: the one escaping path for the terminal, configuration problems and status text.
///
/// A hostile server controls every string in its certificates and answers. Printed raw, an escape sequence
/// can move the cursor, erase lines and paint "trusted (exit 0)" over the real verdict; a bidi override can
/// reorder what is read; a 100 KB host fills the screen and the journal. Each control (C0, DEL, C1) and bidi
/// formatting scalar is written as a visible escape instead (`\x1b`, `\u{202e}`), so what a person sees is
/// what the input holds, and text past a limit is cut with a note of how much was left out. JSON output needs
/// no escaping (its encoder escapes), only the limit.
package enum UntrustedText {
    /// The most scalars ``escaped(_:keepingNewlines:limit:)`` shows by default: room for a pin failure's
    /// chain summary, far less than a hostile megabyte.
    package static let defaultLimit = 4096

    /// `text` with every control and bidi formatting scalar escaped, cut after `limit` scalars of the input;
    /// with `keepingNewlines`, line feeds pass (for pinpath's own multi-line messages) and everything else on
    /// each line is escaped.
    package static func escaped(_ text: String, keepingNewlines: Bool = false, limit: Int = defaultLimit) -> String {
        let scalars = text.unicodeScalars
        let isShort = scalars.count <= limit
        if isShort, !scalars.contains(where: { needsEscape($0) && !(keepingNewlines && $0 == "\n") }) { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(min(scalars.count, limit) + 16)
        for scalar in scalars.prefix(limit) {
            if keepingNewlines && scalar == "\n" || !needsEscape(scalar) {
                result.unicodeScalars.append(scalar)
            } else if scalar.value < 0x100 {
                let hex = String(scalar.value, radix: 16)
                result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            } else {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        if !isShort { result += "…(\(scalars.count - limit) more characters)" }
        return result
    }

    /// `lines`, each escaped as ``escaped(_:keepingNewlines:limit:)`` does (a line feed inside one shows as
    /// `\x0a`, and each has its own cap) and ended by a line feed: for a block pinpath builds from outside pieces,
    /// whose only line breaks are its own.
    package static func escapedLines(_ lines: some Sequence<String>, limit: Int = defaultLimit) -> String {
        var text = ""
        for line in lines {
            text += escaped(line, limit: limit)
            text += "\n"
        }
        return text
    }

    /// `text` cut to its first `limit` scalars (an ellipsis marks the cut), without escaping: for JSON fields,
    /// whose encoder escapes, that must not carry an input of any size.
    package static func truncated(_ text: String, limit: Int) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return text }
        var result = String(String.UnicodeScalarView(scalars.prefix(limit)))
        result += "…"
        return result
    }

    /// `text` cut to at most `maximumUTF8Bytes` bytes of UTF-8, never inside a scalar (an ellipsis marks the
    /// cut), without escaping: for inputs whose bound is a byte count, as a host name's 253.
    package static func truncated(_ text: String, maximumUTF8Bytes: Int) -> String {
        guard text.utf8.count > maximumUTF8Bytes else { return text }
        var result = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= maximumUTF8Bytes else { break }
            result.unicodeScalars.append(scalar)
        }
        result += "…"
        return result
    }

    /// Whether `scalar` is shown as an escape: a control (C0, DEL, C1) or a bidi formatting scalar.
    package static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        // Bidi marks, embeddings, overrides and isolates (Unicode's Bidi_Control property).
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
