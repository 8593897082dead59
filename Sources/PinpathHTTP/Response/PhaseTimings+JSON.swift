import PinpathSupport

/// The JSON shape of a request's phase timings, as `probe.completed` and `connectivity.changed` (`phases_ms`,
/// `total_ms`) and `pinpath request --json` write them, and the phases the metrics textfile names.
extension PhaseTimings {
    /// The phases a request of `kind` has (``ServiceKind/phases``), at blackbox_exporter's boundaries, with
    /// their durations in seconds: all five for HTTP, `resolve`, `connect` (and `tls`) for connection checks;
    /// for a failed request only those it reached (``phasesReached``).
    public func phases(of kind: ServiceKind = .https) -> [(name: String, seconds: Double)] {
        let all = [
            ("resolve", resolve), ("connect", connect), ("tls", tls), ("processing", processing), ("transfer", transfer),
        ]
        let names = phasesReached.map { reached in kind.phases.filter(reached.contains) } ?? kind.phases
        return all.filter { names.contains($0.0) }
    }

    /// `phases_ms`: `{"resolve", "connect", "tls", "processing", "transfer"}` (those of `kind`), in milliseconds.
    public func phasesMillisecondsJSON(of kind: ServiceKind = .https) -> JSONValue {
        .object(phases(of: kind).map { ($0.name, Self.millisecondsJSON($0.seconds)) })
    }

    /// `total_ms`: the whole request in milliseconds.
    public var totalMillisecondsJSON: JSONValue { Self.millisecondsJSON(total) }

    /// Seconds as milliseconds, to the microsecond.
    static func millisecondsJSON(_ seconds: Double) -> JSONValue { .double((seconds * 1_000_000).rounded() / 1000) }
}
