import Foundation

/// How much longer the tests give things that take time: 1 normally, `PINPATH_TIME_SCALE` when set.
/// `scripts/sanitize` sets it (2 for AddressSanitizer, 3 for ThreadSanitizer), because sanitized code runs
/// several times slower. It scales bounds and the timeouts they follow, never what a test asserts.
public enum TestTime {
    public static let scale: Int = {
        guard let text = ProcessInfo.processInfo.environment["PINPATH_TIME_SCALE"] else { return 1 }
        guard let value = Int(text), value >= 1 else { fatalError("PINPATH_TIME_SCALE=\(text): not a whole number ≥ 1") }
        return value
    }()

    /// `duration` times ``scale``.
    public static func scaled(_ duration: Duration) -> Duration { duration * scale }

    /// A configuration duration (`"2s"`) of `seconds` times ``scale``.
    public static func yamlSeconds(_ seconds: Int) -> String { "\(seconds * scale)s" }
}
