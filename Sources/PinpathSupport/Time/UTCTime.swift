import FoundationEssentials
import Glibc

/// Times in UTC, the one way pinpath writes and reads them: RFC 3339 with microseconds for event lines
/// (`2026-11-22T21:55:52.123456Z`, from CLOCK_REALTIME), and the forms people type (a day, an RFC 3339 time,
/// `@` and Unix seconds).
package enum UTCTime {
    /// The current time.
    package static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return format(seconds: spec.tv_sec, microseconds: Int(spec.tv_nsec / 1000))
    }

    /// The time `seconds` and `microseconds` after the Unix epoch. Formats into a fixed 27-byte buffer: this
    /// runs once per event line.
    package static func format(seconds: Int, microseconds: Int) -> String {
        var time = seconds
        var parts = tm()
        gmtime_r(&time, &parts)
        let fields: [(value: Int, width: Int, separator: UInt8)] = [
            (Int(parts.tm_year) + 1900, 4, UInt8(ascii: "-")), (Int(parts.tm_mon) + 1, 2, UInt8(ascii: "-")),
            (Int(parts.tm_mday), 2, UInt8(ascii: "T")), (Int(parts.tm_hour), 2, UInt8(ascii: ":")),
            (Int(parts.tm_min), 2, UInt8(ascii: ":")), (Int(parts.tm_sec), 2, UInt8(ascii: ".")),
            (microseconds, 6, UInt8(ascii: "Z")),
        ]
        return String(unsafeUninitializedCapacity: 27) { output in
            var position = 0
            for field in fields {
                var value = field.value
                for offset in stride(from: field.width - 1, through: 0, by: -1) {
                    output[position + offset] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
                position += field.width
                output[position] = field.separator
                position += 1
            }
            return position
        }
    }

    /// `YYYY-MM-DD` as midnight UTC at the start of that day, or `nil` for anything else (a month or day out of
    /// range, February 30th).
    package static func day(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.map(\.count) == [4, 2, 2],
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        return Date(timeIntervalSince1970: Double(daysSinceEpoch(year: year, month: month, day: day)) * 86_400)
    }

    /// A time as people type it: a day (`2026-01-31`, midnight UTC), RFC 3339 (`2026-01-31T12:00:00Z`, any
    /// offset), or `@` and Unix seconds (`@1769860800`); `nil` for anything else.
    package static func parse(_ text: String) -> Date? {
        if text.hasPrefix("@"), let seconds = Int64(text.dropFirst()) {
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        if let day = day(text) { return day }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
