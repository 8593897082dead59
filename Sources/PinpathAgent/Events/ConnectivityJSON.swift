import FoundationEssentials
import PinpathHTTP

/// A connectivity verdict as JSON, the same in `connectivity.changed` and `pinpath status --connectivity --json`.
public enum ConnectivityJSON {
    /// `state`, then `previous` when given (the event's), `reason` (it quotes whoever answered: cut to
    /// `UntrustedText`'s limit), `url` (without query or credentials), `phases_ms` and `total_ms` (null when
    /// nothing was sent).
    public static func fields(_ verdict: ConnectivityVerdict, url: URL, previous: ConnectivityState?? = nil) -> [(String, JSONValue)] {
        [("state", .string(verdict.state.rawValue))] + (previous.map { [("previous", .string($0?.rawValue))] } ?? []) + [
            ("reason", AgentEvents.outsideText(verdict.reason)),
            ("url", .string(DisplayURL.redacting(url.absoluteString))),
            ("phases_ms", verdict.timings?.phasesMillisecondsJSON(of: ServiceKind(scheme: url.scheme) ?? .http) ?? .null),
            ("total_ms", verdict.timings?.totalMillisecondsJSON ?? .null),
        ]
    }
}
