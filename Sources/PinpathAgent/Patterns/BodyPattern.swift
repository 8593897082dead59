/// A regular expression for response bodies and header values (`body_matches`, `/regex/` in
/// `expect.headers`): PCRE2 syntax on UTF-8, compiled once at load time so that a mistake is a
/// configuration error, and searched under ``PatternLimits`` so that no response makes a probe run on.
public struct BodyPattern: Sendable, Equatable, CustomStringConvertible {
    private let compiled: CompiledPattern
    /// The expression as written.
    public let source: String

    /// Compiles `source`.
    /// - Throws: an error naming the pattern, PCRE2's reason and the offset where PCRE2 stopped.
    public init(_ source: String) throws {
        do {
            compiled = try CompiledPattern(source)
        } catch {
            throw PatternSyntaxError(
                message:
                    "\(ConfigurationProblem.quoted(source)) is not a valid regular expression (PCRE2 syntax): \(error.reason)"
                    + " at offset \(error.offset) of the pattern")
        }
        self.source = source
    }

    /// Whether the expression matches somewhere in `text`.
    /// - Throws: ``PatternMatchError`` when the search passed a limit before it could decide: the text is
    ///   neither accepted nor refused, and a probe fails.
    public func matches(_ text: String) throws(PatternMatchError) -> Bool { try matches(text, limits: .standard) }

    func matches(_ text: String, limits: PatternLimits) throws(PatternMatchError) -> Bool {
        try compiled.matches(in: text, limits: limits)
    }

    /// The expression as written.
    public var description: String { source }

    /// Patterns compare by their source: the same text compiles to the same expression.
    public static func == (lhs: BodyPattern, rhs: BodyPattern) -> Bool { lhs.source == rhs.source }

    private struct PatternSyntaxError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
