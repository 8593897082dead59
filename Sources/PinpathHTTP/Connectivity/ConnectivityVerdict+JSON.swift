import FoundationEssentials
import PinpathSupport

extension ConnectivityVerdict {
    /// The verdict as JSON members, the same in the agent's `connectivity.changed` and `pinpath status
    /// --connectivity --json`: `state`, then `previous` when given (the event's), `reason` (it quotes whoever
    /// answered: cut to `UntrustedText`'s limit), `url` (the check's, without query or credentials), `phases_ms`
    /// and `total_ms` (null when nothing was sent).
    public func jsonFields(url: URL, previous: ConnectivityState?? = nil) -> [(String, JSONValue)] {
        [("state", .string(state.rawValue))] + (previous.map { [("previous", .string($0?.rawValue))] } ?? []) + [
            ("reason", .string(UntrustedText.truncated(reason, limit: UntrustedText.defaultLimit))),
            ("url", .string(DisplayURL.redacting(url.absoluteString))),
            ("phases_ms", timings?.phasesMillisecondsJSON(of: ServiceKind(scheme: url.scheme) ?? .http) ?? .null),
            ("total_ms", timings?.totalMillisecondsJSON ?? .null),
        ]
    }
}
