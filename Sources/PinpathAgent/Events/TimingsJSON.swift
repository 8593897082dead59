import PinpathHTTP

/// The JSON shape of a request's phase timings, as `probe.completed` (`phases_ms`, `total_ms`) and
/// `pinpath request --json` write them, and the phases the metrics textfile names.
public enum TimingsJSON {
    /// The phases a request of `kind` has (``ServiceKind/phases``), at blackbox_exporter's boundaries, with
    /// their durations in seconds: all five for HTTP, `resolve`, `connect` (and `tls`) for connection checks;
    /// for a failed request only those it reached (``PhaseTimings/phasesReached``).
    public static func phases(_ timings: PhaseTimings, kind: ServiceKind = .https) -> [(name: String, seconds: Double)] {
        let all = [
            ("resolve", timings.resolve), ("connect", timings.connect), ("tls", timings.tls),
            ("processing", timings.processing), ("transfer", timings.transfer),
        ]
        let names = timings.phasesReached.map { reached in kind.phases.filter(reached.contains) } ?? kind.phases
        return all.filter { names.contains($0.0) }
    }

    /// `phases_ms`: `{"resolve", "connect", "tls", "processing", "transfer"}` (those of `kind`), in milliseconds.
    public static func phasesMilliseconds(_ timings: PhaseTimings, kind: ServiceKind = .https) -> JSONValue {
        .object(phases(timings, kind: kind).map { ($0.name, milliseconds($0.seconds)) })
    }

    /// Seconds as milliseconds, to the microsecond.
    public static func milliseconds(_ seconds: Double) -> JSONValue { .double((seconds * 1_000_000).rounded() / 1000) }
}
