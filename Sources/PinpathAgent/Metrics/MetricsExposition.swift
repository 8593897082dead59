import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// Renders a ``MetricsSnapshot`` in the Prometheus text format (0.0.4) or in OpenMetrics 1.0: one renderer for
/// the node_exporter textfile and for `/metrics`, so both show the same families.
///
/// The names follow blackbox_exporter's where the meaning is the same, so that its dashboards work:
/// `probe_success`, `probe_duration_seconds`, `probe_http_duration_seconds{phase}`, `probe_http_status_code`,
/// `probe_ssl_earliest_cert_expiry`, `probe_ssl_last_chain_expiry_timestamp_seconds`, `probe_tls_version_info`,
/// `probe_ssl_ocsp_response_status`, each with an `endpoint` label; pinpath's own are prefixed `pinpath_`.
/// No timestamps: node_exporter's textfile collector rejects them.
enum MetricsExposition {
    /// The two exposition formats.
    enum Format: Sendable, Equatable {
        /// The Prometheus text format, version 0.0.4.
        case prometheus
        /// OpenMetrics 1.0: counters' family names without `_total`, and `# EOF` at the end.
        case openMetrics

        /// The `Content-Type` of a response in this format.
        var contentType: String {
            switch self {
            case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
            case .openMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
            }
        }

        /// The format a scraper asks for with its `Accept` header: OpenMetrics when it names
        /// `application/openmetrics-text` (Prometheus does so first, with a higher `q`), the text format otherwise.
        init(accept: String?) {
            let wantsOpenMetrics =
                accept?.split(separator: ",").contains { range in
                    let mediaType = range.split(separator: ";", maxSplits: 1).first ?? ""
                    let quality = range.split(separator: ";").dropFirst().first {
                        $0.trimmingSpaces.hasPrefix("q=")
                    }
                    return mediaType.trimmingSpaces.lowercased() == "application/openmetrics-text"
                        && quality.flatMap { Double($0.trimmingSpaces.dropFirst(2)) } != 0
                } ?? false
            self = wantsOpenMetrics ? .openMetrics : .prometheus
        }
    }

    /// The snapshot as exposition text: HELP and TYPE once per family, samples in the endpoints' order.
    static func render(_ snapshot: MetricsSnapshot, format: Format = .prometheus) -> String {
        var body = Body(snapshot, format: format)
        var text: [UInt8] = []
        while let piece = body.next() { text.append(contentsOf: piece) }
        return String(decoding: text, as: UTF8.self)
    }

    /// The exposition in pieces of about ``pieceSize`` bytes, for a response written as it is rendered: no whole
    /// body (10 MB at 10,000 endpoints) is built and copied, and every piece reuses one buffer. ``render(_:format:)``
    /// joins the pieces, so the textfile and `/metrics` stay the same text.
    struct Body {
        /// Under the agent's mmap threshold (128 KiB, set in `RunCommand`): the buffers of a piece and of its
        /// copy into NIO come from the heap and are reused, where a 10 MB buffer was a fresh mapping, page-faulted
        /// in at every scrape.
        static let pieceSize = 64 << 10

        private let snapshot: MetricsSnapshot
        private let rendered: [RenderedEndpoint]
        private var out: Output
        /// Where the per-endpoint families stand: the family, whether its header is written, the next endpoint.
        private var family = 0
        private var familyStarted = false
        private var endpoint = 0
        private var finished = false

        init(_ snapshot: MetricsSnapshot, format: Format) {
            self.snapshot = snapshot
            rendered = snapshot.rendered ?? snapshot.endpoints.map(RenderedEndpoint.init)
            out = Output(format: format)
        }

        /// The next piece, or nil after the last. The piece is the renderer's own buffer: let it go before the next
        /// call, or that call copies it.
        mutating func next() -> [UInt8]? {
            guard !finished else { return nil }
            out.text.removeAll(keepingCapacity: true)
            let families = RenderedEndpoint.families
            while out.text.count < Self.pieceSize && family < families.count {
                if !familyStarted {
                    // A family without samples says nothing: OCSP, when no server stapled.
                    let index = family
                    if families[index].onlyWithSamples && rendered.allSatisfy({ $0.section(index).isEmpty }) {
                        family += 1
                        continue
                    }
                    out.family(families[index].name, families[index].type, families[index].help)
                    familyStarted = true
                }
                while endpoint < rendered.count && out.text.count < Self.pieceSize {
                    out.text.append(contentsOf: rendered[endpoint].section(family))
                    endpoint += 1
                }
                if endpoint == rendered.count {
                    // Target probes' pin failures (`/probe`) close their family, labelled by module only: the targets
                    // a scraper names are unbounded, the modules are the configuration's.
                    if families[family].name == "pinpath_pin_failures" {
                        for entry in snapshot.targetPinFailures {
                            let label = "module=\"\(MetricsExposition.escape(entry.module))\""
                            out.sample("pinpath_pin_failures_total", label, "enforced", "true", Double(entry.enforced))
                            out.sample("pinpath_pin_failures_total", label, "enforced", "false", Double(entry.reportOnly))
                        }
                    }
                    family += 1
                    familyStarted = false
                    endpoint = 0
                }
            }
            if family == families.count {
                MetricsExposition.renderAgentFamilies(snapshot, into: &out)
                finished = true
            }
            return out.text
        }
    }

    /// The families that are not per endpoint (a few hundred bytes), and OpenMetrics' `# EOF`.
    private static func renderAgentFamilies(_ snapshot: MetricsSnapshot, into out: inout Output) {
        if let status = snapshot.pathStatus {
            out.family("pinpath_reachability_status", .gauge, "The network path's status: 1 for the current one.")
            for candidate in [ReachabilityStatus.reachable, .unreachable] {
                out.sample("pinpath_reachability_status", "status=\"\(candidate.rawValue)\"", status == candidate ? 1 : 0)
            }
        }
        if let connectivity = snapshot.connectivity {
            out.family("pinpath_connectivity_status", .gauge, "The connectivity check's verdict: 1 for the current state.")
            for candidate in ConnectivityState.allCases {
                out.sample("pinpath_connectivity_status", "state=\"\(candidate.rawValue)\"", connectivity.state == candidate ? 1 : 0)
            }
            if let seconds = connectivity.seconds {
                out.family("pinpath_connectivity_check_duration_seconds", .gauge, "How long the last connectivity check took.")
                out.sample("pinpath_connectivity_check_duration_seconds", "", seconds)
            }
        }
        out.family("pinpath_target_reachable", .gauge, "Whether a watched host can be reached from here.")
        for (target, reachable) in snapshot.targets {
            out.sample("pinpath_target_reachable", "target=\"\(escape(target))\"", reachable ? 1 : 0)
        }
        out.family("pinpath_events_dropped", .counter, "Event lines the agent dropped, by reason.")
        for (reason, count) in snapshot.eventsDropped {
            out.sample("pinpath_events_dropped_total", "reason=\"\(escape(reason))\"", Double(count))
        }
        out.family("pinpath_probes", .counter, "Probe results recorded since the agent started.")
        out.sample("pinpath_probes_total", "", Double(snapshot.probes))
        out.family("pinpath_probe_lateness_seconds", .histogram, "How late probes started against their schedule.")
        out.histogram("pinpath_probe_lateness_seconds", snapshot.lateness)
        if let route = snapshot.probeRoute { renderProbeRouteFamilies(route, into: &out) }
        out.family("pinpath_metrics_write_failures", .counter, "Failed writes of the metrics textfile.")
        out.sample("pinpath_metrics_write_failures_total", "", Double(snapshot.textfileWriteFailures))
        out.family(
            "pinpath_metrics_auth_failures", .counter,
            "Requests the metrics listener refused for their credentials (metrics.basic_auth), by reason.")
        for (reason, count) in snapshot.listenerAuthFailures.sorted(by: { $0.key < $1.key }) {
            out.sample("pinpath_metrics_auth_failures_total", "reason=\"\(escape(reason))\"", Double(count))
        }
        out.family("pinpath_build_info", .gauge, "The agent's build: always 1, the labels say which.")
        out.sample(
            "pinpath_build_info", snapshot.buildLabels.map { "\($0.name)=\"\(escape($0.value))\"" }.joined(separator: ","), 1)
        if out.format == .openMetrics { out.append("# EOF\n") }
    }

    /// The states, once: `allCases` builds a new array at each call.
    static let states = EndpointState.Status.allCases

    /// blackbox_exporter's spelling of a TLS version (`TLS 1.3`) for OpenSSL's (`TLSv1.3`), so that its
    /// dashboards' queries match.
    static func blackboxTLSVersion(_ openSSLName: String) -> String {
        openSSLName.hasPrefix("TLSv") ? "TLS " + openSSLName.dropFirst(4) : openSSLName
    }

    /// Label values escape backslash, double quote and line feed (the rule of both formats), on UTF-8 bytes as
    /// the formats define it. Never per `Character`: a quote followed by a combining mark (`"` U+0301) is one
    /// grapheme that is not `"`, and so is CR LF, so such a value went out unescaped and Prometheus refused the
    /// whole exposition. None of the three bytes occurs inside a multi-byte UTF-8 sequence.
    static func escape(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") })
        else { return value }
        var escaped: [UInt8] = []
        escaped.reserveCapacity(value.utf8.count + 8)
        for byte in value.utf8 {
            let escapedByte: UInt8? =
                switch byte {
                case UInt8(ascii: "\\"), UInt8(ascii: "\""): byte
                case UInt8(ascii: "\n"): UInt8(ascii: "n")
                default: nil
                }
            if let escapedByte {
                escaped.append(UInt8(ascii: "\\"))
                escaped.append(escapedByte)
            } else {
                escaped.append(byte)
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    /// Integers without a fraction; the text format's spelling of infinities and NaN.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    enum FamilyType: String {
        case gauge, counter, histogram
    }

    /// The text being built, as bytes (appending to an array beats appending to a String, and a label is never
    /// joined into a new String: its pieces are appended in place), and the format's rules for family headers.
    struct Output {
        let format: Format
        var text: [UInt8] = []

        init(format: Format) {
            self.format = format
        }

        mutating func append(_ string: String) {
            text.append(contentsOf: string.utf8)
        }

        /// `# HELP` and `# TYPE`. A counter's family is named without `_total`: OpenMetrics requires it, and the
        /// text format wants the sample's name (with `_total`) in its headers.
        mutating func family(_ name: String, _ type: FamilyType, _ help: String) {
            let headerName = type == .counter && format == .prometheus ? name + "_total" : name
            append("# HELP \(headerName) \(help)\n# TYPE \(headerName) \(type.rawValue)\n")
        }

        /// A histogram's `_bucket` (cumulative), `_sum` and `_count` samples.
        mutating func histogram(_ name: String, _ histogram: SecondsHistogram) {
            var cumulative = 0
            for (index, count) in histogram.counts.enumerated() {
                cumulative += count
                let bound = index < histogram.bounds.count ? MetricsExposition.format(histogram.bounds[index]) : "+Inf"
                sample(name + "_bucket", "le=\"\(bound)\"", Double(cumulative))
            }
            sample(name + "_sum", "", histogram.sum)
            sample(name + "_count", "", Double(histogram.count))
        }

        /// One sample; `labels` is already `name="escaped",…`, or empty.
        mutating func sample(_ name: String, _ labels: String, _ value: Double) {
            sample(name, labels, nil, "", value)
        }

        /// One sample: `labels` is already `name="escaped",…` or empty, and `extraName="extraValue"` (already
        /// escaped) follows it when given.
        mutating func sample(_ name: String, _ labels: String, _ extraName: String?, _ extraValue: String, _ value: Double) {
            append(name)
            if !labels.isEmpty || extraName != nil {
                text.append(UInt8(ascii: "{"))
                append(labels)
                if let extraName {
                    if !labels.isEmpty { text.append(UInt8(ascii: ",")) }
                    append(extraName)
                    text.append(contentsOf: #"=""#.utf8)
                    append(extraValue)
                    text.append(UInt8(ascii: "\""))
                }
                text.append(UInt8(ascii: "}"))
            }
            text.append(UInt8(ascii: " "))
            if value == value.rounded(), abs(value) < 1e15 {
                appendInteger(Int64(value))
            } else if let micros = Self.wholeMicroseconds(value) {
                appendMicroseconds(micros)
            } else {
                append(MetricsExposition.format(value))
            }
            text.append(UInt8(ascii: "\n"))
        }

        /// `value` in millionths when it has at most six decimals (libcurl's timings are whole microseconds),
        /// else nil: such a value is written exactly without Double's general formatting, the costliest part of a
        /// scrape.
        static func wholeMicroseconds(_ value: Double) -> Int64? {
            let scaled = value * 1_000_000
            let rounded = scaled.rounded()
            guard abs(rounded) < 1e15, abs(scaled - rounded) < 1e-6 * max(1, abs(scaled)),
                Double(Int64(rounded)) / 1_000_000 == value
            else { return nil }
            return Int64(rounded)
        }

        /// A number of millionths as a decimal fraction without trailing zeros: 12500 → `0.0125`.
        private mutating func appendMicroseconds(_ micros: Int64) {
            if micros < 0 { text.append(UInt8(ascii: "-")) }
            let magnitude = micros.magnitude
            appendInteger(Int64(magnitude / 1_000_000))
            var fraction = magnitude % 1_000_000
            guard fraction != 0 else { return }
            text.append(UInt8(ascii: "."))
            var width = 6
            while fraction % 10 == 0 {
                fraction /= 10
                width -= 1
            }
            var divisor: UInt64 = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8(fraction / divisor % 10))
                divisor /= 10
            }
        }

        /// Decimal digits without a String in between: most samples are 0, 1 or a Unix time.
        private mutating func appendInteger(_ value: Int64) {
            if value < 0 { text.append(UInt8(ascii: "-")) }
            var magnitude = value.magnitude
            var digits: (UInt64, UInt64) = (0, 0)  // 16 bytes: enough for |value| < 1e15
            withUnsafeMutableBytes(of: &digits) { buffer in
                var index = buffer.count
                repeat {
                    index -= 1
                    buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                    magnitude /= 10
                } while magnitude > 0
                text.append(contentsOf: buffer[index...])
            }
        }
    }
}

/// One endpoint's sample lines, family by family, rendered once when the endpoint changes (``MetricsStore``
/// keeps them): a scrape of 10,000 endpoints then copies bytes instead of formatting 170,000 samples. The lines
/// are the same in both formats; only the family headers differ.
struct RenderedEndpoint: Sendable {
    /// The per-endpoint families, in the order they are written.
    static let families: [(name: String, type: MetricsExposition.FamilyType, help: String, onlyWithSamples: Bool)] = [
        ("probe_success", .gauge, "Whether the endpoint's last probe succeeded.", false),
        ("probe_duration_seconds", .gauge, "Duration of the endpoint's last probe, all phases.", false),
        ("probe_http_duration_seconds", .gauge, "Duration of each phase of the endpoint's last probe.", false),
        ("probe_http_status_code", .gauge, "The last probe's HTTP status code; 0 without a response.", false),
        ("probe_ssl_earliest_cert_expiry", .gauge, "Earliest expiry of the certificates served, in Unix time.", false),
        (
            "probe_ssl_last_chain_expiry_timestamp_seconds", .gauge, "Earliest expiry in the verified chain, in Unix time.",
            false
        ),
        ("probe_tls_version_info", .gauge, "The TLS version the last probe negotiated.", false),
        ("probe_ssl_ocsp_response_status", .gauge, "The stapled OCSP response's status: 0 good, 1 revoked, 2 unknown.", true),
        ("probe_ssl_ocsp_status", .gauge, "Under revocation: ocsp, the leaf's OCSP status: 1 for the current one.", true),
        (
            "probe_ssl_ocsp_next_update_timestamp_seconds", .gauge, "The nextUpdate of the OCSP answer about the leaf, in Unix time.",
            true
        ),
        ("pinpath_endpoint_state", .gauge, "The endpoint's state: 1 for the current one.", false),
        ("pinpath_probe_failure_info", .gauge, "Why the endpoint's last probe failed: 1 with its category; absent after a success.", false),
        ("pinpath_pin_failures", .counter, "Pin validation failures since the agent started.", false),
    ]

    /// Every family's lines, one after the other.
    let bytes: [UInt8]
    /// Where each family's lines end in `bytes`.
    private let ends: [Int32]

    /// The lines of family number `index`.
    func section(_ index: Int) -> ArraySlice<UInt8> {
        bytes[(index == 0 ? 0 : Int(ends[index - 1]))..<Int(ends[index])]
    }

    /// The lines of a configured endpoint: every sample carries `endpoint="…"`.
    init(_ endpoint: MetricsSnapshot.Endpoint) {
        // The label, escaped once rather than once per sample.
        self.init(endpoint, labels: "endpoint=\"\(MetricsExposition.escape(endpoint.name))\"")
    }

    /// The lines with `labels` (already `name="escaped",…`, or empty) on every sample.
    init(_ endpoint: MetricsSnapshot.Endpoint, labels: String) {
        var out = MetricsExposition.Output(format: .prometheus)
        var ends = SectionEnds()
        ends.ends.reserveCapacity(Self.families.count)
        Self.write(endpoint, labels: labels, into: &out, sections: &ends)
        bytes = out.text
        self.ends = ends.ends
    }

    /// Where each family's lines end, for ``section(_:)``.
    private struct SectionEnds: ProbeFamilySections {
        var ends: [Int32] = []

        mutating func begin(_ family: Int, in out: inout MetricsExposition.Output) {}

        mutating func end(_ family: Int, in out: inout MetricsExposition.Output) {
            ends.append(Int32(out.text.count))
        }
    }

    /// The one definition of the per-probe families' samples, in the order of ``families``: `/metrics` and the
    /// textfile write them for each endpoint, `/probe` for one probe's result (``TargetProbeExposition``).
    /// `sections` is told where each family begins and ends; a family without samples writes nothing between.
    static func write(
        _ probe: some ProbeSampleValues, labels label: String, into out: inout MetricsExposition.Output,
        sections: inout some ProbeFamilySections
    ) {
        var family = 0
        func section(_ write: (inout MetricsExposition.Output) -> Void) {
            sections.begin(family, in: &out)
            write(&out)
            sections.end(family, in: &out)
            family += 1
        }
        let succeeded = probe.probeSucceeded
        section { if let succeeded { $0.sample("probe_success", label, succeeded ? 1 : 0) } }
        section { if let seconds = probe.probeDuration { $0.sample("probe_duration_seconds", label, seconds) } }
        section { out in
            probe.forEachPhase { phase, seconds in out.sample("probe_http_duration_seconds", label, "phase", phase, seconds) }
        }
        section { if succeeded != nil { $0.sample("probe_http_status_code", label, Double(probe.statusCode ?? 0)) } }
        section { if let expiry = probe.earliestCertificateExpiry { $0.sample("probe_ssl_earliest_cert_expiry", label, expiry) } }
        section { out in
            if let expiry = probe.lastChainExpiry { out.sample("probe_ssl_last_chain_expiry_timestamp_seconds", label, expiry) }
        }
        section { out in
            if let version = probe.tlsVersion {
                out.sample(
                    "probe_tls_version_info", label, "version",
                    MetricsExposition.escape(MetricsExposition.blackboxTLSVersion(version)), 1)
            }
        }
        section { if let status = probe.ocspResponseStatus { $0.sample("probe_ssl_ocsp_response_status", label, Double(status)) } }
        section { out in
            if let current = probe.ocspStatus {
                for status in OCSPCheck.Status.all {
                    out.sample("probe_ssl_ocsp_status", label, "status", status.description, status.description == current ? 1 : 0)
                }
            }
        }
        section { out in
            if let nextUpdate = probe.ocspNextUpdate { out.sample("probe_ssl_ocsp_next_update_timestamp_seconds", label, nextUpdate) }
        }
        section { out in
            if let current = probe.endpointState {
                for state in MetricsExposition.states {
                    out.sample("pinpath_endpoint_state", label, "state", state.rawValue, current == state ? 1 : 0)
                }
            }
        }
        section {
            if let category = probe.failureCategory { $0.sample("pinpath_probe_failure_info", label, "category", category.rawValue, 1) }
        }
        section { out in
            if let failures = probe.pinFailures {
                out.sample("pinpath_pin_failures_total", label, "enforced", "true", Double(failures.enforced))
                out.sample("pinpath_pin_failures_total", label, "enforced", "false", Double(failures.reportOnly))
            }
        }
    }

    /// Each family's `# HELP` and `# TYPE` lines in the Prometheus text format, rendered once.
    static let prometheusHeaders: [[UInt8]] = families.map { family in
        var out = MetricsExposition.Output(format: .prometheus)
        out.family(family.name, family.type, family.help)
        return out.text
    }
}

/// What the per-probe families show of one probe, however it is held: an endpoint's snapshot, or a `/probe` result
/// read as it is (``RenderedEndpoint/write(_:labels:into:sections:)``).
protocol ProbeSampleValues {
    /// Whether the probe succeeded; nil before an endpoint's first (no samples, and no status code).
    var probeSucceeded: Bool? { get }
    var probeDuration: Double? { get }
    /// Calls `body` with each phase the probe's kind has (`resolve`, `connect`, `tls`, …) and its seconds.
    func forEachPhase(_ body: (String, Double) -> Void)
    var statusCode: Int? { get }
    var earliestCertificateExpiry: Double? { get }
    var lastChainExpiry: Double? { get }
    /// As OpenSSL names it (`TLSv1.3`).
    var tlsVersion: String? { get }
    var ocspResponseStatus: Int? { get }
    var ocspStatus: String? { get }
    var ocspNextUpdate: Double? { get }
    var failureCategory: FailureCategory? { get }
    /// An endpoint's state; nil for a probe that is no endpoint's (no `pinpath_endpoint_state` samples).
    var endpointState: EndpointState.Status? { get }
    /// An endpoint's pin failures since start; nil for a probe that is no endpoint's (no samples).
    var pinFailures: (enforced: Int, reportOnly: Int)? { get }
}

/// Told where each per-probe family's samples begin and end as ``RenderedEndpoint/write(_:labels:into:sections:)``
/// writes them: to keep their places, or to put the family's header before them.
protocol ProbeFamilySections {
    mutating func begin(_ family: Int, in out: inout MetricsExposition.Output)
    mutating func end(_ family: Int, in out: inout MetricsExposition.Output)
}

extension MetricsSnapshot.Endpoint: ProbeSampleValues {
    func forEachPhase(_ body: (String, Double) -> Void) {
        for (phase, seconds) in phaseDurations { body(phase, seconds) }
    }

    var endpointState: EndpointState.Status? { state }
    var pinFailures: (enforced: Int, reportOnly: Int)? { (enforcedPinFailures, reportOnlyPinFailures) }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (FoundationEssentials has no `trimmingCharacters`).
    fileprivate var trimmingSpaces: Substring {
        var result = self
        while result.first == " " || result.first == "\t" { result.removeFirst() }
        while result.last == " " || result.last == "\t" { result.removeLast() }
        return result
    }
}
