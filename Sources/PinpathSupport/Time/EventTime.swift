import Glibc

/// RFC 3339 UTC timestamps with microseconds (`2026-11-22T21:55:52.123456Z`), from CLOCK_REALTIME.
public enum EventTime {
    /// The current time.
    public static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return format(seconds: spec.tv_sec, microseconds: Int(spec.tv_nsec / 1000))
    }

    /// The time `seconds` and `microseconds` after the Unix epoch. Formats into a fixed 27-byte buffer: this
    /// runs once per event line.
    public static func format(seconds: Int, microseconds: Int) -> String {
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
}
