/// The configuration's durations: a whole number and a unit, `500ms`, `30s`, `5m`, `2h`, `14d`, or several
/// from the largest unit down (`1h30m`), as Prometheus and Go write them.
///
/// Fractions, spaces and bare numbers are refused rather than guessed at: `30` could mean seconds or
/// milliseconds, and `1.5m` invites rounding surprises. Zero parses; fields where zero is meaningless (an
/// interval, a timeout) refuse it themselves.
package enum DurationSyntax {
    /// Why a text is not a duration: ``message`` says what to write instead.
    package struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// `"5 minutes" is not a duration (use 300s or 5m)`.
        package let message: String
        /// The message.
        package var description: String { message }
    }

    /// The units, largest first, with their length in milliseconds.
    static let units: [(suffix: String, milliseconds: Int64)] = [
        ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1),
    ]

    /// Parses `500ms`, `30s`, `5m`, `2h`, `14d` or a sequence such as `1h30m`.
    /// - Throws: ``ParseError`` for anything else, negative values, and values too large to represent,
    ///   suggesting the right spelling when the text reads like `5 minutes`.
    package static func parse(_ text: String) throws(ParseError) -> Duration {
        let invalid = ParseError(message: "\(ConfigurationProblem.quoted(text)) is not a duration (\(hint(for: text)))")
        if text.hasPrefix("-") {
            throw ParseError(message: "\(ConfigurationProblem.quoted(text)) is negative; a duration is 0 or more")
        }
        var rest = Substring(text)
        var total: Int64 = 0
        var previousUnit = -1
        guard !rest.isEmpty else { throw invalid }
        while !rest.isEmpty {
            let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
            guard !digits.isEmpty else { throw invalid }
            rest = rest.dropFirst(digits.count)
            let letters = rest.prefix(while: { $0.isASCII && $0.isLetter })
            rest = rest.dropFirst(letters.count)
            guard let unit = units.firstIndex(where: { $0.suffix == letters }), unit > previousUnit else { throw invalid }
            previousUnit = unit
            guard let value = Int64(digits) else { throw tooLarge(text) }
            let (milliseconds, overflow) = value.multipliedReportingOverflow(by: units[unit].milliseconds)
            let (sum, overflowSum) = total.addingReportingOverflow(milliseconds)
            guard !overflow, !overflowSum else { throw tooLarge(text) }
            total = sum
        }
        return .milliseconds(total)
    }

    /// The shortest exact form in the largest unit that divides the duration: `90s` for 1.5 minutes,
    /// `14d`, `500ms`; sub-millisecond parts are dropped (the syntax cannot write them).
    package static func format(_ duration: Duration) -> String {
        let milliseconds = duration.wholeMilliseconds
        guard milliseconds != 0 else { return "0s" }
        let unit = units.first { milliseconds % $0.milliseconds == 0 } ?? units[units.count - 1]
        return "\(milliseconds / unit.milliseconds)\(unit.suffix)"
    }

    private static func tooLarge(_ text: String) -> ParseError {
        ParseError(message: "\(ConfigurationProblem.quoted(text)) is too long a duration")
    }

    /// The spelling to suggest: `5 minutes` → `use 300s or 5m`; otherwise the general form.
    private static func hint(for text: String) -> String {
        let general = "use a whole number and a unit: 500ms, 30s, 5m, 2h or 14d"
        let words = text.lowercased().split(separator: " ")
        guard words.count == 2, let number = Int64(words[0]), number < 1_000_000 else {
            if let number = Int64(text.filter { !$0.isWhitespace }) { return "use \(number)s, or another unit: ms, m, h, d" }
            return general
        }
        let word = words[1].hasSuffix("s") && words[1].count > 2 ? words[1].dropLast() : words[1]
        switch word {
        case "millisecond", "msec", "ms": return "use \(number)ms"
        case "second", "sec", "s": return "use \(number)s"
        case "minute", "min", "m": return "use \(number * 60)s or \(number)m"
        case "hour", "hr", "h": return "use \(number * 60)m or \(number)h"
        case "day", "d": return "use \(number * 24)h or \(number)d"
        case "week", "wk", "w": return "use \(number * 7)d"
        default: return general
        }
    }
}
