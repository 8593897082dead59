import Glibc

/// RFC 3339 UTC timestamps with microseconds (`2026-11-22T21:55:52.123456Z`), from CLOCK_REALTIME.
public enum EventTime {
    /// The current time.
    public static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return format(seconds: spec.tv_sec, microseconds: Int(spec.tv_nsec / 1000))
    }

    static func format(seconds: Int, microseconds: Int) -> String {
        var time = seconds
        var parts = tm()
        gmtime_r(&time, &parts)
        return "\(Int(parts.tm_year) + 1900)-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))T"
            + "\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2)).\(pad(microseconds, 6))Z"
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
