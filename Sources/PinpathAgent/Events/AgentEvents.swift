import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// The agent's event types and their fields (everything after the envelope). One place, so the README's
/// reference and the output cannot drift apart.
enum AgentEvents {
    static let started = "agent.started"
    static let stopping = "agent.stopping"
    static let reloaded = "config.reloaded"
    static let rejected = "config.rejected"
    static let probeCompleted = "probe.completed"
    static let pinFailure = "pin.failure"
    static let certificateExpiring = "tls.certificate_expiring"
    static let metricsWriteFailed = "metrics.write_failed"

    static func path(_ path: NetworkPath) -> JSONValue {
        .object([
            ("status", .string(path.status.rawValue)),
            ("interface", .string(path.primaryInterface?.name)),
            ("kind", .string(path.primaryInterface?.kind.rawValue)),
            ("ipv4", .bool(path.ipv4 != nil)),
            ("ipv6", .bool(path.ipv6 != nil)),
        ])
    }

    static func milliseconds(_ seconds: Double) -> JSONValue { .double((seconds * 1_000_000).rounded() / 1000) }

    /// A probe's result as `probe.completed` carries it, and as `endpoint.state_changed` nests it.
    static func probe(_ result: ProbeResult) -> [(String, JSONValue)] {
        let timings = result.timings
        return [
            ("outcome", .string(result.outcome.rawValue)),
            ("status_code", result.statusCode.map(JSONValue.int) ?? .null),
            ("phases_ms", timings.map { timings in
                .object([
                    ("resolve", milliseconds(timings.resolve)), ("connect", milliseconds(timings.connect)),
                    ("tls", milliseconds(timings.tls)), ("processing", milliseconds(timings.processing)),
                    ("transfer", milliseconds(timings.transfer)),
                ])
            } ?? .null),
            ("total_ms", timings.map { milliseconds($0.total) } ?? .null),
            ("remote_address", .string(result.remoteAddress)),
            ("tls_version", .string(result.tlsVersion)),
            ("error_category", .string(result.errorCategory)),
            ("message", .string(result.message)),
        ]
    }

    static func stateChanged(_ endpoint: EndpointConfiguration, _ transition: EndpointState.Transition, probe: ProbeResult?)
        -> [(String, JSONValue)]
    {
        [("endpoint", .string(endpoint.name)), ("url", .string(HTTPRequest(method: endpoint.method, url: endpoint.url).displayURL))] + transition.fields
            + [("probe", probe.map { .object(Self.probe($0)) } ?? .null)]
    }

    static func pinFailure(_ endpoint: EndpointConfiguration, _ evaluation: TrustEvaluation, suppressed: Int) -> [(String, JSONValue)] {
        let report = evaluation.report
        return [
            ("endpoint", .string(endpoint.name)),
            ("enforced", .bool(!evaluation.allowsConnection)),
            ("message", .string(evaluation.failure?.message)),
            ("suppressed", .int(suppressed)),
        ] + report.fields.map { ($0.name, json($0.value)) }
    }

    static func json(_ value: ReportValue) -> JSONValue {
        switch value {
        case .string(let text): return .string(text)
        case .integer(let number): return .int(number)
        case .boolean(let flag): return .bool(flag)
        case .strings(let texts): return .array(texts.map(JSONValue.string))
        case .null: return .null
        }
    }

    static func rfc3339(_ date: Date?) -> JSONValue { .string(date.map { $0.formatted(.iso8601) }) }
}
