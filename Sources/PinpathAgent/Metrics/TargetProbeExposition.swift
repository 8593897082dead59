import PinpathSupport

/// The answer to a `/probe` request: one probe's families as an endpoint's are rendered in `/metrics`, without the
/// `endpoint` label (the scrape's target is the series' identity, as with blackbox_exporter), and its debug text.
enum TargetProbeExposition {
    /// An endpoint's families that say nothing about one probe: its state machine, and counters since start.
    private static let endpointOnlyFamilies: Set<String> = ["pinpath_endpoint_state", "pinpath_pin_failures"]

    /// The probe's families in the Prometheus text format: HELP and TYPE, then the samples, for each family the
    /// probe has samples in. `probe_duration_seconds` is `seconds`, the whole request's time as blackbox_exporter
    /// measures it (resolution and the gate included, also when no transfer ran).
    static func render(_ result: ProbeResult, seconds: Double) -> String {
        var endpoint = MetricsSnapshot.Endpoint(
            name: "", lastProbe: EndpointTracker.LastProbe(result), kind: result.kind, state: .unknown)
        endpoint.probeDuration = seconds
        let lines = RenderedEndpoint(endpoint, labels: "")
        var out = MetricsExposition.Output(format: .prometheus)
        for (index, family) in RenderedEndpoint.families.enumerated() where !endpointOnlyFamilies.contains(family.name) {
            let section = lines.section(index)
            guard !section.isEmpty else { continue }
            out.family(family.name, family.type, family.help)
            out.text.append(contentsOf: section)
        }
        return String(decoding: out.text, as: UTF8.self)
    }

    /// `debug=true`'s answer, in blackbox_exporter's layout: the probe's log, then the metrics the scrape would have
    /// had. Each log line is escaped (control and bidi characters, length): it quotes what the server sent.
    static func debugText(log: [String]?, exposition: String) -> String {
        "Logs for the probe:\n" + UntrustedText.escapedLines(log ?? []) + "\n\n\nMetrics that would have been returned:\n"
            + exposition
    }
}
