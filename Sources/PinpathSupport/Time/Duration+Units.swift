extension Duration {
    /// Whole nanoseconds, truncated, clamped to `Int64`'s range (about 292 years).
    package var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflowed) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflowedAgain) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed || overflowedAgain ? (seconds < 0 ? .min : .max) : sum
    }

    /// Whole microseconds, truncated.
    package var wholeMicroseconds: Int64 { wholeNanoseconds / 1_000 }

    /// Whole milliseconds, truncated.
    package var wholeMilliseconds: Int64 { wholeNanoseconds / 1_000_000 }

    /// Whole milliseconds, rounded up: for timeouts handed to `poll(2)` or libcurl, where a remainder cut
    /// off would wake the caller just before the time it asked for.
    package var millisecondsRoundedUp: Int64 {
        let nanoseconds = wholeNanoseconds
        return nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 > 0 ? 1 : 0)
    }

    /// Seconds as a floating-point number, for rates and JSON fields.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
