import FoundationEssentials
import PinpathSupport

/// A time to verify a chain as of, as a person writes it: RFC 3339 (`2026-01-31T12:00:00Z`), a bare date
/// (`2026-01-31`, midnight UTC) or `@UNIX-SECONDS`.
public struct VerificationTime: Hashable, Sendable {
    /// The time.
    public let date: Date

    /// Parses one of the three forms.
    /// - Throws: ``SecurityError`` with code `invalidInput`: `"next tuesday" is not a time (use …)`.
    public init(parsing text: String) throws {
        guard let date = UTCTime.parse(text) else {
            throw SecurityError(.invalidInput, "\"\(text)\" is not a time (use 2026-01-31, 2026-01-31T12:00:00Z or @UNIX-SECONDS)")
        }
        self.date = date
    }
}
