import PinpathHTTP
import PinpathReachability
import PinpathSupport

/// Everything the metrics show at one moment: what ``MetricsExposition`` renders for the textfile and for
/// `/metrics`. A value: the agent keeps the current one in a ``MetricsStore`` and readers take a copy.
struct MetricsSnapshot: Sendable {
    /// What one endpoint contributes.
    struct Endpoint: Sendable {
        /// The endpoint's name (the `endpoint` label). Never its URL: that may carry credentials.
        var name: String
        /// The last probe's outcome; nil before the first (no sample is written).
        var probeSucceeded: Bool?
        /// The last probe's total duration in seconds, when a response arrived.
        var probeDuration: Double?
        /// The last probe's phases (`resolve`, `connect`, `tls`, `processing`, `transfer`) in seconds.
        var phaseDurations: [(phase: String, seconds: Double)]
        /// The last probe's HTTP status code; 0 when it got no response (as blackbox_exporter).
        var statusCode: Int?
        /// The TLS version the last probe negotiated (`TLSv1.3`, as OpenSSL names it).
        var tlsVersion: String?
        /// Why the last probe failed (its `error_category`, `pinpath_probe_failure_info`'s `category`); nil
        /// after a success and before the first probe.
        var failureCategory: FailureCategory?
        /// The state.
        var state: EndpointState.Status
        /// The earliest `notAfter` of every certificate served, in seconds since the epoch.
        var earliestCertificateExpiry: Double?
        /// The earliest `notAfter` of the verified chain, in seconds since the epoch.
        var lastChainExpiry: Double?
        /// Pin failures since start that refused the connection.
        var enforcedPinFailures: Int
        /// Pin failures since start under a report-only policy.
        var reportOnlyPinFailures: Int
        /// The status in the OCSP response the server stapled in the last probe (0 good, 1 revoked, 2 unknown,
        /// as blackbox_exporter's `probe_ssl_ocsp_response_status`); nil without a staple (no sample).
        var ocspResponseStatus: Int?
        /// Under `revocation: ocsp`, the leaf's status in the last probe (`good`, `revoked`, `unknown`,
        /// `unavailable`); nil otherwise (no samples).
        var ocspStatus: String?
        /// The nextUpdate of the OCSP answer behind ``ocspStatus``, in seconds since the epoch.
        var ocspNextUpdate: Double?

        /// Whether the endpoint has its first result: probed once, or found unreachable by the path.
        var hasFirstResult: Bool { probeSucceeded != nil || state != .unknown }

        /// - Parameters: as the properties.
        init(
            name: String, probeSucceeded: Bool?, probeDuration: Double? = nil,
            phaseDurations: [(phase: String, seconds: Double)] = [], statusCode: Int? = nil, tlsVersion: String? = nil,
            failureCategory: FailureCategory? = nil, state: EndpointState.Status, earliestCertificateExpiry: Double? = nil,
            lastChainExpiry: Double? = nil,
            enforcedPinFailures: Int = 0, reportOnlyPinFailures: Int = 0, ocspResponseStatus: Int? = nil,
            ocspStatus: String? = nil, ocspNextUpdate: Double? = nil
        ) {
            self.name = name
            self.probeSucceeded = probeSucceeded
            self.probeDuration = probeDuration
            self.phaseDurations = phaseDurations
            self.statusCode = statusCode
            self.tlsVersion = tlsVersion
            self.failureCategory = failureCategory
            self.state = state
            self.earliestCertificateExpiry = earliestCertificateExpiry
            self.lastChainExpiry = lastChainExpiry
            self.enforcedPinFailures = enforcedPinFailures
            self.reportOnlyPinFailures = reportOnlyPinFailures
            self.ocspResponseStatus = ocspResponseStatus
            self.ocspStatus = ocspStatus
            self.ocspNextUpdate = ocspNextUpdate
        }
    }

    /// The endpoints, in configuration order.
    var endpoints: [Endpoint] = []
    /// The endpoints' sample lines as the store rendered them when they changed, in the same order; nil: rendered
    /// from `endpoints` when needed.
    var rendered: [RenderedEndpoint]?
    /// The path's status; nil before the first snapshot.
    var pathStatus: ReachabilityStatus?
    /// The connectivity check's last verdict and how long it took (seconds; nil when nothing was sent); nil
    /// when the check is off or has not run yet.
    var connectivity: (state: ConnectivityState, seconds: Double?)?
    /// Every watched target (the configured ones and the endpoints' hosts) and whether it is reachable.
    var targets: [(target: String, reachable: Bool)] = []
    /// Event lines lost since start, by reason (`queue_full`, `write_failed`).
    var eventsDropped: [(reason: String, count: Int)] = [("queue_full", 0), ("write_failed", 0)]
    /// Probe results recorded since start.
    var probes = 0
    /// Pin failures seen by target probes (`/probe`), by module, in the order first seen.
    var targetPinFailures: [(module: String, enforced: Int, reportOnly: Int)] = []
    /// How late probes started against their schedule.
    var lateness = SecondsHistogram(bounds: SecondsHistogram.latenessBounds)
    /// The `/probe` route's counters, when the listener serves it.
    var probeRoute: ProbeRouteMetrics.Snapshot?
    /// Failed writes of the metrics textfile since start.
    var textfileWriteFailures = 0
    /// Requests the metrics listener refused for their credentials, by reason (`missing`, `wrong`).
    var listenerAuthFailures: [String: Int] = ["missing": 0, "wrong": 0]
    /// The labels of `pinpath_build_info`: the version and the commit `pinpath --version` names (`unknown` for a
    /// build made outside a git checkout, so that the series keeps one set of labels).
    var buildLabels: [(name: String, value: String)] = [
        ("version", PinpathVersion.current), ("commit", PinpathVersion.commit ?? "unknown"),
    ]

    /// - Parameter endpoints: the endpoints' metrics, in order.
    init(endpoints: [Endpoint] = []) {
        self.endpoints = endpoints
    }

    /// Whether the agent is ready (`/readyz`): the first path snapshot is taken and every endpoint has its first
    /// result (probed once, or found unreachable without a probe: that endpoint would otherwise never be).
    var isReady: Bool { pathStatus != nil && endpoints.allSatisfy(\.hasFirstResult) }
}

/// A cumulative histogram of durations in seconds with fixed bounds (Prometheus's `le`): probe start lateness, and
/// the `/probe` route's request durations.
struct SecondsHistogram: Sendable, Equatable {
    /// How late probes start against their schedule: milliseconds matter.
    static let latenessBounds: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// How long a `/probe` request takes: a handshake on loopback up to a scrape's whole timeout.
    static let probeBounds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// The upper bounds of the buckets, in seconds; `+Inf` is implied.
    let bounds: [Double]
    /// Observations at or below each bound (not cumulative; the renderer sums them), and above the last.
    private(set) var counts: [Int]
    /// The sum of the observations, in seconds.
    private(set) var sum = 0.0
    /// How many observations.
    private(set) var count = 0

    init(bounds: [Double]) {
        self.bounds = bounds
        counts = [Int](repeating: 0, count: bounds.count + 1)
    }

    /// Adds one observation of `seconds`.
    mutating func observe(_ seconds: Double) {
        let index = bounds.firstIndex { seconds <= $0 } ?? bounds.count
        counts[index] += 1
        sum += seconds
        count += 1
    }
}
