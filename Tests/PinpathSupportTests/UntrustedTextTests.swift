import PinpathSupport
import Testing

/// `UntrustedText`, the one escaping path for text from outside (PinpathSupport has no test target of its own:
/// the agent is its largest user). What each rule stops: the C0 and C1 controls move the cursor, erase lines and
/// start OSC sequences (clipboard writes, hidden links); the bidi controls reorder what is read; the cap keeps a
/// hostile megabyte off the screen and out of the journal.
@Suite("Untrusted text")
struct UntrustedTextTests {
    @Test(
        "Every control and bidi formatting scalar is shown as an escape; the rest passes",
        arguments: [
            ("plain text, é, 東京, 🇫🇷", "plain text, é, 東京, 🇫🇷"),
            ("\u{1B}[2Kfull", #"\x1b[2Kfull"#),
            ("a\rb\nc\td\u{0}", #"a\x0db\x0ac\x09d\x00"#),
            ("\u{7F}\u{85}\u{9B}31m", #"\x7f\x85\x9b31m"#),
            ("\u{1B}]52;c;ZXZpbA==\u{7}", #"\x1b]52;c;ZXZpbA==\x07"#),
            ("\u{202E}txt.exe", #"\u{202e}txt.exe"#),
            ("\u{61C}\u{200E}\u{200F}\u{202A}\u{2066}\u{2069}", #"\u{61c}\u{200e}\u{200f}\u{202a}\u{2066}\u{2069}"#),
            ("line\u{2028}separator", "line\u{2028}separator"),
        ] as [(String, String)])
    func escapes(input: String, shown: String) {
        #expect(Array(UntrustedText.escaped(input).unicodeScalars) == Array(shown.unicodeScalars))
        #expect(!UntrustedText.escaped(input).unicodeScalars.contains { UntrustedText.needsEscape($0) })
    }

    @Test("keepingNewlines lets line feeds through and escapes everything else, CR included")
    func newlines() {
        #expect(UntrustedText.escaped("a\nb\r\n\u{1B}c", keepingNewlines: true) == "a\nb\\x0d\n\\x1bc")
        #expect(UntrustedText.escaped("a\nb") == #"a\x0ab"#)
    }

    @Test("The cap counts the input's scalars and says how many were left out")
    func cap() {
        let long = String(repeating: "a", count: 10_000)
        #expect(UntrustedText.escaped(long) == String(repeating: "a", count: UntrustedText.defaultLimit) + "…(5904 more characters)")
        #expect(UntrustedText.escaped("\u{1B}\u{1B}\u{1B}", limit: 2) == #"\x1b\x1b…(1 more characters)"#)
        #expect(UntrustedText.escaped("abc", limit: 3) == "abc")
    }

    @Test("escapedLines escapes and caps each line on its own, and ends each with a line feed")
    func lines() {
        let text = UntrustedText.escapedLines(["name: a\nforged: line", "b\u{1B}", String(repeating: "x", count: 5)], limit: 4)
        #expect(text == "name…(16 more characters)\nb\\x1b\nxxxx…(1 more characters)\n")
        #expect(UntrustedText.escapedLines([String]()) == "")
    }

    @Test("Truncation for JSON keeps the characters and cuts by scalars or by UTF-8 bytes, never inside a scalar")
    func truncation() {
        #expect(UntrustedText.truncated("a\u{1B}bc", limit: 2) == "a\u{1B}…")
        #expect(UntrustedText.truncated("abc", limit: 3) == "abc")
        #expect(UntrustedText.truncated("aé東", maximumUTF8Bytes: 6) == "aé東")
        #expect(UntrustedText.truncated("aé東", maximumUTF8Bytes: 5) == "aé…")
        #expect(UntrustedText.truncated("aé東", maximumUTF8Bytes: 2) == "a…")
        #expect(UntrustedText.truncated(String(repeating: "h", count: 300), maximumUTF8Bytes: 253).utf8.count == 253 + "…".utf8.count)
    }
}
