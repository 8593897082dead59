import FoundationEssentials
import PinpathHTTP
import PinpathSupport

/// The answer to a `/probe` request: one probe's families as an endpoint's are rendered in `/metrics`, without the
/// `endpoint` label (the scrape's target is the series' identity, as with blackbox_exporter), and its debug text.
enum TargetProbeExposition {
    /// The probe's families in the Prometheus text format: HELP and TYPE, then the samples, for each family the
    /// probe has samples in. `probe_duration_seconds` is `seconds`, the whole request's time as blackbox_exporter
    /// measures it (resolution and the gate included, also when no transfer ran).
    ///
    /// Written from the result into one buffer by the families' one definition
    /// (``RenderedEndpoint/write(_:labels:into:sections:)``): no endpoint snapshot, and the endpoint-only families
    /// (its state, its pin failures since start) have no samples, so nothing is rendered to be dropped.
    static func bytes(_ samples: TargetProbeSamples) -> [UInt8] {
        var out = MetricsExposition.Output(format: .prometheus)
        out.text.reserveCapacity(2048)
        var headers = HeadedFamilies()
        RenderedEndpoint.write(samples, labels: "", into: &out, sections: &headers)
        return out.text
    }

    /// The exposition of `result` as text.
    static func render(_ result: ProbeResult, seconds: Double) -> String {
        String(decoding: bytes(TargetProbeSamples(result, seconds: seconds)), as: UTF8.self)
    }

    /// A probe's answer as the listener writes it: read from the agent's answer on the probe's task, as an
    /// endpoint's tracker reads its probe's result, so that the result (its chains' certificates among it) is
    /// freed there, and the listener's thread renders and writes only.
    enum Answer: Sendable {
        /// The probe ran: the values its families show, and its log when `debug` asked for one.
        case probed(TargetProbeSamples, log: [String]?)
        case refused(String)
        case invalid(String)
        case unavailable(String)

        init(_ answer: TargetProbeAnswer, seconds: Double) {
            switch answer {
            case .probed(let result, let log): self = .probed(TargetProbeSamples(result, seconds: seconds), log: log)
            case .refused(let reason): self = .refused(reason)
            case .invalid(let reason): self = .invalid(reason)
            case .unavailable(let reason): self = .unavailable(reason)
            }
        }
    }

    /// `debug=true`'s answer, in blackbox_exporter's layout: the probe's log, then the metrics the scrape would have
    /// had. Each log line is escaped (control and bidi characters, length): it quotes what the server sent.
    static func debugText(log: [String]?, exposition: String) -> String {
        "Logs for the probe:\n" + UntrustedText.escapedLines(log ?? []) + "\n\n\nMetrics that would have been returned:\n"
            + exposition
    }

    /// Writes each family's header before its samples, and takes it back when the family has none.
    private struct HeadedFamilies: ProbeFamilySections {
        private var samplesStart = 0

        mutating func begin(_ family: Int, in out: inout MetricsExposition.Output) {
            out.text.append(contentsOf: RenderedEndpoint.prometheusHeaders[family])
            samplesStart = out.text.count
        }

        mutating func end(_ family: Int, in out: inout MetricsExposition.Output) {
            if out.text.count == samplesStart { out.text.removeLast(RenderedEndpoint.prometheusHeaders[family].count) }
        }
    }
}

/// A `/probe` result as the per-probe families read it: what an endpoint's snapshot would hold after this probe
/// (``EndpointTracker/LastProbe``, and the endpoint snapshot's reading of it), with the request's own duration and
/// no endpoint state or counters.
struct TargetProbeSamples: ProbeSampleValues, Sendable {
    let last: EndpointTracker.LastProbe
    let kind: ServiceKind
    let probeDuration: Double?

    init(_ result: ProbeResult, seconds: Double) {
        last = EndpointTracker.LastProbe(result)
        kind = result.kind
        probeDuration = seconds
    }

    var probeSucceeded: Bool? { last.succeeded }

    func forEachPhase(_ body: (String, Double) -> Void) {
        guard let timings = last.timings else { return }
        for phase in timings.phases(of: kind) { body(phase.name, phase.seconds) }
    }

    var statusCode: Int? { last.statusCode }
    var earliestCertificateExpiry: Double? { last.earliestServedExpiry?.timeIntervalSince1970 }
    var lastChainExpiry: Double? { last.verifiedChainExpiry?.timeIntervalSince1970 }
    var tlsVersion: String? { last.tlsVersion }
    var ocspResponseStatus: Int? { last.ocspResponseStatus }
    var ocspStatus: String? { last.ocspStatus?.description }
    var ocspNextUpdate: Double? { last.ocspNextUpdate?.timeIntervalSince1970 }
    var failureCategory: FailureCategory? { last.failureCategory }
    var endpointState: EndpointState.Status? { nil }
    var pinFailures: (enforced: Int, reportOnly: Int)? { nil }
}
