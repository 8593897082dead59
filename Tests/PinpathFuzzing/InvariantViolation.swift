/// A fuzz input broke a promise of the code under test: the message says which, and shows the input.
///
/// The libFuzzer targets (fuzz/) trap on it, so that libFuzzer keeps the input as a crash; the tests report it.
public struct InvariantViolation: Error, Sendable, CustomStringConvertible {
    /// What was promised and what happened instead.
    public let message: String

    init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// Throws an ``InvariantViolation`` with `message` unless `condition` holds.
func require(_ condition: Bool, _ message: @autoclosure () -> String) throws(InvariantViolation) {
    if !condition { throw InvariantViolation(message()) }
}

/// A short, printable form of an input for messages (the input itself is what the crash file keeps).
func excerpt(_ text: String, limit: Int = 200) -> String {
    let quoted = String(reflecting: String(text.prefix(limit)))
    return text.count > limit ? "\(quoted)… (\(text.count) characters)" : quoted
}

/// Whether `text` holds `part` byte for byte. `String.contains` and `hasPrefix` compare Characters, so a part
/// followed by a combining mark in the text (`"` then U+06EC) would not be found there.
func containsBytes(_ text: String, _ part: String) -> Bool {
    Array(text.utf8).firstRange(of: Array(part.utf8)) != nil
}
