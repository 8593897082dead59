/// Text from the network made safe for a terminal: a certificate's names, a server's error text.
///
/// A hostile server controls every string in its certificates. Printed raw, an escape sequence in a SAN
/// can move the cursor, erase lines and paint "trusted (exit 0)" over the real verdict; a bidi override can
/// reorder what is read. Each such scalar is written as a visible escape instead (`\x1b`, `\u{202e}`), so
/// what a person sees is what the certificate holds. JSON output needs none of this: its encoder escapes.
enum TerminalText {
    /// `text` with every control (C0, DEL, C1) and bidi formatting scalar escaped; with `keepingNewlines`,
    /// line feeds pass (for pinpath's own multi-line messages) and everything else on each line is escaped.
    static func escaped(_ text: String, keepingNewlines: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { needsEscape($0) && !(keepingNewlines && $0 == "\n") }) else { return text }
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            if keepingNewlines && scalar == "\n" || !needsEscape(scalar) {
                result.unicodeScalars.append(scalar)
            } else if scalar.value < 0x100 {
                let hex = String(scalar.value, radix: 16)
                result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            } else {
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        // Bidi marks, embeddings, overrides and isolates (Unicode's Bidi_Control property).
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
