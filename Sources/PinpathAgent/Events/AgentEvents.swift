import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// Builds every event the agent writes (the types and their fields listed in ``EventCatalog``; the fields of
/// reachability data and timings are their types' JSON, from PinpathReachability and PinpathHTTP). The one place event fields are made: the rest of the agent hands
/// values here and writes what comes back.
enum AgentEvents {
    static func started(
        configurationPath: String, configuration: AgentConfiguration, once: Bool, path: NetworkPath
    ) -> AgentEvent {
        AgentEvent(
            EventCatalog.agentStarted,
            [
                ("version", .string(PinpathVersion.current)),
                ("config", .string(configurationPath)),
                ("endpoints", .int(configuration.endpoints.count)),
                ("once", .bool(once)),
                ("path", path.summaryJSON),
                ("warnings", .array(configuration.warnings.map(\.jsonValue))),
            ], level: configuration.warnings.isEmpty ? .info : .warning)
    }

    static func stopping(
        reason: String, uptime: Duration, counters: AgentCore.Counters, eventsDropped: Int
    ) -> AgentEvent {
        AgentEvent(
            EventCatalog.agentStopping,
            [
                ("reason", .string(reason)),
                ("uptime_s", .double((uptime / .milliseconds(1)).rounded() / 1000)),
                ("probes", .int(counters.probes)),
                ("failures", .int(counters.failures)),
                ("pin_failures", .int(counters.pinFailures)),
                ("events_dropped", .int(eventsDropped)),
                ("schedule_lateness_ms", counters.lateness.json),
            ])
    }

    static func reloaded(configurationPath: String, configuration: AgentConfiguration, change: ConfigurationChange) -> AgentEvent {
        var fields: [(String, JSONValue)] = [
            ("config", .string(configurationPath)),
            ("endpoints", .int(configuration.endpoints.count)),
            ("added", .array(change.added.map(JSONValue.string))),
            ("removed", .array(change.removed.map(JSONValue.string))),
            ("changed", .array(change.changed.map(JSONValue.string))),
            ("warnings", .array(configuration.warnings.map(\.jsonValue))),
        ]
        if !change.restartRequired.isEmpty {
            fields.append(("restart_required", .array(change.restartRequired.map(JSONValue.string))))
        }
        return AgentEvent(EventCatalog.configReloaded, fields, level: configuration.warnings.isEmpty ? .info : .warning)
    }

    static func rejected(configurationPath: String, _ error: ConfigurationError) -> AgentEvent {
        AgentEvent(
            EventCatalog.configRejected,
            [
                ("config", .string(configurationPath)),
                ("errors", .array(error.problems.map(\.jsonValue))),
            ])
    }

    static func reachability(_ event: ReachabilityEvent) -> AgentEvent {
        let (kind, level) = EventCatalog.reachability(event)
        return AgentEvent(kind, event.jsonFields, level: level)
    }

    /// `previous`: the state before, `nil` for the first verdict. `url` is the check's, without its query.
    /// `intercepted` is an error: someone on the path answered the check's TLS handshake with a certificate its
    /// policy refuses.
    static func connectivityChanged(_ verdict: ConnectivityVerdict, previous: ConnectivityState?, url: URL) -> AgentEvent {
        let level: EventLevel =
            switch verdict.state {
            case .full: .info
            case .intercepted: .error
            case .none, .limited, .portal: .warning
            }
        return AgentEvent(
            EventCatalog.connectivityChanged, verdict.jsonFields(url: url, previous: .some(previous)), level: level)
    }

    /// `connectivity`: the check's last state when the result was recorded (`nil`: none configured, or no verdict yet).
    static func probeCompleted(_ result: ProbeResult, connectivity: ConnectivityState?) -> AgentEvent {
        AgentEvent(
            EventCatalog.probeCompleted, [("endpoint", .string(result.endpoint))] + probe(result) + [Self.connectivity(connectivity)],
            level: result.outcome == .success ? .info : .warning)
    }

    /// A probe's result as `probe.completed` carries it, and as `endpoint.state_changed` nests it.
    private static func probe(_ result: ProbeResult) -> [(String, JSONValue)] {
        let timings = result.timings
        // `status_code` is HTTP's: absent from the other kinds' results rather than always null.
        let status: [(String, JSONValue)] = result.kind.isHTTP ? [("status_code", result.statusCode.map(JSONValue.int) ?? .null)] : []
        return [("outcome", .string(result.outcome.rawValue))] + status + [
            ("phases_ms", timings?.phasesMillisecondsJSON(of: result.kind) ?? .null),
            ("total_ms", timings?.totalMillisecondsJSON ?? .null),
            ("remote_address", .string(result.remoteAddress)),
            ("tls_version", .string(result.tlsVersion)),
            ("served_chain", chainSummary(result.evaluation?.servedChain ?? [])),
            ("error_category", .string(result.errorCategory?.rawValue)),
            ("message", outsideText(probeMessage(result))),
            ("profile", .string(result.evaluation?.appliedProfile?.description)),
        ]
    }

    /// A probe's message, with an enforced pin failure's OkHttp-shaped account (each certificate's pin and
    /// subject, then the pins expected: a dozen lines) replaced by ``pinMismatchSummary(_:)``. That account is
    /// written once, in `pin.failure`; a probe's event only points to it, the same words for the same failure.
    /// The rest of the message (the request before it, a STARTTLS note after it) stays.
    static func probeMessage(_ result: ProbeResult) -> String? {
        guard let message = result.message, let evaluation = result.pinFailure, !evaluation.allowsConnection,
            let failure = evaluation.failure
        else { return result.message }
        return message.replacing(failure.message, with: pinMismatchSummary(evaluation), maxReplacements: 1)
    }

    /// `127.0.0.1: certificate pinning failure: the verified chain matched none of the 2 pins (see pin.failure)`.
    static func pinMismatchSummary(_ evaluation: TrustEvaluation) -> String {
        let count = evaluation.failure?.expectedPins.count ?? evaluation.policy.pins.count
        return "\(evaluation.host): certificate pinning failure: the verified chain matched none of the \(count) "
            + "pin\(count == 1 ? "" : "s") (see pin.failure)"
    }

    /// A chain as the events show it, leaf first: each certificate's subject, SPKI pin and notAfter (the PEMs are
    /// `pin.failure`'s, and only with `events.include_certificates`); null when no handshake reached a
    /// certificate. A server chooses both the chain and the names: at most ``servedChainLimit`` certificates,
    /// each subject cut to ``servedSubjectLimit`` scalars, so that a 100 KB certificate list does not become
    /// every probe's event.
    private static func chainSummary(_ chain: [Certificate]) -> JSONValue {
        guard !chain.isEmpty else { return .null }
        return .array(
            chain.prefix(servedChainLimit).map {
                .object([
                    ("subject", .string(UntrustedText.truncated($0.subject, limit: servedSubjectLimit))),
                    ("pin", .string($0.spkiPin.description)),
                    ("not_after", rfc3339($0.notAfter)),
                ])
            })
    }

    /// The certificates a chain summary shows, and the length of each subject there.
    static let servedChainLimit = 10
    static let servedSubjectLimit = 256

    static func stateChanged(
        _ endpoint: EndpointConfiguration, _ transition: EndpointState.Transition, probe: ProbeResult?, connectivity: ConnectivityState?
    ) -> AgentEvent {
        let url = SessionRequest(method: endpoint.method, url: endpoint.url).displayURL
        return AgentEvent(
            EventCatalog.endpointStateChanged,
            [("endpoint", .string(endpoint.name)), ("url", .string(url))] + transition.fields
                + [Self.connectivity(connectivity), ("probe", probe.map { .object(Self.probe($0)) } ?? .null)],
            level: transition.current == .down ? .error : transition.current == .unreachable ? .warning : .info)
    }

    /// A pin failure is the same event whatever `connectivity` says: the field is context, never a reason to
    /// lower the level. Its `message` is the failure's full account in OkHttp's shape (each certificate of the
    /// validated chain as pin and subject, then the pins expected), the one event that carries it; the served
    /// chain is a summary (subject, pin, notAfter); RFC 7469's PEM arrays of both chains follow only when
    /// `includeCertificates` (`events.include_certificates`). A structured validated chain beside the account
    /// would say the same certificates twice in one line, and cost a two-certificate failure its 1.5 KB budget.
    ///
    /// A target probe's (`probe` given) names the module and the target (its URL as events show URLs, credentials
    /// and query removed) instead of an endpoint.
    static func pinFailure(
        _ endpoint: EndpointConfiguration, _ evaluation: TrustEvaluation, suppressed: Int, connectivity: ConnectivityState?,
        includeCertificates: Bool, probe: (module: String, target: URL)? = nil
    ) -> AgentEvent {
        let report = evaluation.report.fields.filter { includeCertificates || !certificateReportFields.contains($0.name) }
        return AgentEvent(
            EventCatalog.pinFailure,
            [
                ("endpoint", probe == nil ? .string(endpoint.name) : .null),
                ("module", .string(probe?.module)),
                ("target", .string(probe.map { DisplayURL.redacting($0.target.absoluteString) })),
                ("enforced", .bool(!evaluation.allowsConnection)),
                ("message", outsideText(evaluation.failure?.message)),
                ("profile", .string(evaluation.appliedProfile?.description)),
                Self.connectivity(connectivity),
                ("suppressed", .int(suppressed)),
                ("served_chain", chainSummary(evaluation.servedChain)),
            ] + report.map { ($0.name, json($0.value)) },
            level: evaluation.allowsConnection ? .warning : .error)
    }

    /// The report's fields that hold whole certificates (PEM arrays): in `pin.failure` only with
    /// `events.include_certificates`, always in the body POSTed to a collector.
    static let certificateReportFields: Set = ["served-certificate-chain", "validated-certificate-chain"]

    static func certificateExpiring(
        _ endpoint: EndpointConfiguration, _ evaluation: TrustEvaluation, _ warning: ExpiryCheck.Warning
    ) -> AgentEvent {
        AgentEvent(
            EventCatalog.certificateExpiring,
            [
                ("endpoint", .string(endpoint.name)),
                ("host", .string(evaluation.host)),
                ("subject", .string(warning.certificate.subject)),
                ("depth", .int(warning.depth)),
                ("not_after", rfc3339(warning.certificate.notAfter)),
                ("days_left", .int(warning.daysLeft)),
                ("threshold", .string(DurationSyntax.format(warning.threshold))),
                ("earliest_served_expiry", rfc3339(evaluation.servedChain.map(\.notAfter).min())),
                ("verified_chain_expiry", rfc3339(evaluation.verifiedChain.map(\.notAfter).min())),
            ])
    }

    /// A served certificate is past its notAfter: an error whether the chain validated or not, once per
    /// certificate while it is served.
    static func certificateExpired(
        _ endpoint: EndpointConfiguration, _ evaluation: TrustEvaluation, _ expired: ExpiryCheck.Expired
    ) -> AgentEvent {
        AgentEvent(
            EventCatalog.certificateExpired,
            [
                ("endpoint", .string(endpoint.name)),
                ("host", .string(evaluation.host)),
                ("subject", outsideText(expired.certificate.subject)),
                ("depth", .int(expired.depth)),
                ("not_after", rfc3339(expired.certificate.notAfter)),
                ("days_expired", .int(expired.daysExpired)),
                ("chain_validated", .bool(evaluation.chainValidated)),
            ])
    }

    /// The OCSP status of the endpoint's leaf changed from `previous` (`nil`: the first since start).
    static func revocationChecked(
        _ endpoint: EndpointConfiguration, _ evaluation: TrustEvaluation, _ check: OCSPCheck, previous: OCSPCheck.Status?
    ) -> AgentEvent {
        AgentEvent(
            EventCatalog.revocationChecked,
            [
                ("endpoint", .string(endpoint.name)),
                ("host", .string(evaluation.host)),
                ("status", .string(check.status.description)),
                ("previous_status", .string(previous?.description)),
                ("source", .string(check.stapled ? "staple" : check.responderURL == nil ? nil : "responder")),
                ("responder_url", outsideText(check.responderURL?.absoluteString)),
                ("next_update", rfc3339(check.nextUpdate)),
                ("soft_failed", .bool(check.softFailed)),
                ("detail", outsideText(check.detail)),
            ],
            level: check.status == .good ? .info : check.status == .revoked ? .error : .warning)
    }

    /// A pin failure report arrived at its collector (a 2xx answer).
    static func reportDelivered(_ job: PinReportJob, attempts: Int, statusCode: Int, dropped: Int) -> AgentEvent {
        AgentEvent(
            EventCatalog.reportDelivered,
            [
                ("url", .string(job.collector.displayURL)), ("endpoint", .string(job.endpoint)), ("hostname", .string(job.hostname)),
                ("port", .int(job.port)), ("attempts", .int(attempts)), ("status_code", .int(statusCode)),
                ("dropped", .int(dropped)),
            ])
    }

    /// A pin failure report did not arrive after its last try (or the agent stopped first). `reason` is the
    /// request core's error category, `unexpected_status` or `shutdown`.
    static func reportDeliveryFailed(
        _ job: PinReportJob, attempts: Int, reason: String, statusCode: Int?, message: String, dropped: Int
    ) -> AgentEvent {
        AgentEvent(
            EventCatalog.reportDeliveryFailed,
            [
                ("url", .string(job.collector.displayURL)), ("endpoint", .string(job.endpoint)), ("hostname", .string(job.hostname)),
                ("port", .int(job.port)), ("attempts", .int(attempts)), ("reason", .string(reason)),
                ("status_code", statusCode.map(JSONValue.int) ?? .null), ("message", outsideText(message)), ("dropped", .int(dropped)),
            ])
    }

    /// The body POSTed to a collector: RFC 7469's report, the same fields and values `pin.failure` carries.
    static func reportBody(_ report: PinFailureReport) -> JSONValue {
        .object(report.fields.map { ($0.name, json($0.value)) })
    }

    /// `errorName`: the errno's name of the last failed write (`ENOSPC`), `nil` for a full queue.
    static func dropped(count: Int, reason: String, errorName: String?) -> AgentEvent {
        AgentEvent(EventCatalog.eventsDropped, [("count", .int(count)), ("reason", .string(reason)), ("error", .string(errorName))])
    }

    /// `errnoName`: the failed call's errno by name (`ENOTDIR`, `ENOSPC`).
    static func metricsWriteFailed(file: String, error: String, errnoName: String) -> AgentEvent {
        AgentEvent(
            EventCatalog.metricsWriteFailed, [("file", .string(file)), ("error", .string(error)), ("errno", .string(errnoName))])
    }

    private static func json(_ value: ReportValue) -> JSONValue {
        switch value {
        case .string(let text): return .string(text)
        case .integer(let number): return .int(number)
        case .boolean(let flag): return .bool(flag)
        case .strings(let texts): return .array(texts.map(JSONValue.string))
        case .null: return .null
        }
    }

    private static func rfc3339(_ date: Date?) -> JSONValue { .string(date.map { $0.formatted(.iso8601) }) }

    /// The `connectivity` field of the endpoints' events: the check's state, `null` without one.
    private static func connectivity(_ state: ConnectivityState?) -> (String, JSONValue) {
        ("connectivity", .string(state?.rawValue))
    }

    /// A message that quotes what a server sent (its certificates' names, a redirect's URL), cut to
    /// `UntrustedText`'s limit: exact in JSON, but no input of any size reaches every event.
    static func outsideText(_ text: String?) -> JSONValue {
        .string(text.map { UntrustedText.truncated($0, limit: UntrustedText.defaultLimit) })
    }
}

extension EndpointState.Transition {
    /// The event type a transition is reported as.
    static let eventName = EventCatalog.endpointStateChanged.name

    /// The transition's event fields: `state`, `previous_state` (null from `unknown`), `cause` and
    /// `consecutive`. The caller puts the endpoint's name and the deciding probe's details around them.
    var fields: [(String, JSONValue)] {
        [
            ("state", .string(current.rawValue)),
            ("previous_state", previous == .unknown ? .null : .string(previous.rawValue)),
            ("cause", .string(cause.rawValue)),
            ("consecutive", .int(consecutive)),
        ]
    }
}
