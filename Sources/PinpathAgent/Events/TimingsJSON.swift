import PinpathHTTP

/// The JSON shape of a request's phase timings, as `probe.completed` (`phases_ms`, `total_ms`) and
/// `pinpath request --json` write them, and the phases the metrics textfile names.
public enum TimingsJSON {
    /// The phases, at blackbox_exporter's boundaries, with their durations in seconds.
    public static func phases(_ timings: PhaseTimings) -> [(name: String, seconds: Double)] {
        [
            ("resolve", timings.resolve), ("connect", timings.connect), ("tls", timings.tls),
            ("processing", timings.processing), ("transfer", timings.transfer),
        ]
    }

    /// `phases_ms`: `{"resolve", "connect", "tls", "processing", "transfer"}`, in milliseconds.
    public static func phasesMilliseconds(_ timings: PhaseTimings) -> JSONValue {
        .object(phases(timings).map { ($0.name, milliseconds($0.seconds)) })
    }

    /// Seconds as milliseconds, to the microsecond.
    public static func milliseconds(_ seconds: Double) -> JSONValue { .double((seconds * 1_000_000).rounded() / 1000) }
}
