import FoundationEssentials
import PinpathHTTP
import PinpathReachability

/// What the agent keeps per endpoint: its configuration, its state machine, its expiry warnings and the
/// last result (for metrics).
struct EndpointTracker: Sendable {
    var endpoint: EndpointConfiguration
    var state: EndpointState
    var expiry: ExpiryCheck
    /// The last result, without its certificate chains: see ``record(_:)``.
    private(set) var lastResult: ProbeResult?
    /// The earliest expiry among the certificates served, and among the verified chain, at the last probe.
    private(set) var lastExpiry: (served: Date?, chain: Date?) = (nil, nil)
    var pinFailures = 0
    /// Bumped by a reload that changed the endpoint: results of probes started before are dropped.
    var generation: Int

    init(_ endpoint: EndpointConfiguration, generation: Int, thresholdsOfOne: Bool = false) {
        self.endpoint = endpoint
        self.generation = generation
        state = thresholdsOfOne
            ? EndpointState(failureThreshold: 1, successThreshold: 1)
            : EndpointState(failureThreshold: endpoint.failureThreshold, successThreshold: endpoint.successThreshold)
        expiry = ExpiryCheck(window: endpoint.certExpiryWarning)
    }

    /// Keeps what the metrics need from a result: its outcome, its timings and its chains' expiry dates, not the
    /// chains. A probe's served leaf is a freshly parsed certificate with its decoded key (kilobytes), and
    /// holding one per endpoint between probes was most of the agent's memory at 10,000 endpoints.
    mutating func record(_ result: ProbeResult) {
        lastExpiry = (
            result.evaluation?.servedChain.map(\.notAfter).min(), result.evaluation?.verifiedChain.map(\.notAfter).min()
        )
        var kept = result
        kept.evaluation = nil
        lastResult = kept
    }

    /// The host the endpoint connects to, as the monitor watches it (brackets removed from IPv6 literals).
    static func host(of endpoint: EndpointConfiguration) -> String? {
        guard let host = endpoint.url.host(percentEncoded: false), !host.isEmpty else { return nil }
        return host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
    }

    /// Whether the monitor says the endpoint can be tried: its host's own verdict when it is watched (a name
    /// that failed to resolve is left to the probe, which reports it as a resolve failure), else the path's.
    static func isReachable(_ endpoint: EndpointConfiguration, on path: NetworkPath) -> Bool {
        if let host = host(of: endpoint), let target = path.target(host) {
            return target.status == .reachable || target.reason == .dnsFailed
        }
        return path.status == .reachable
    }

    /// The metrics of this endpoint.
    var metrics: TextfileMetrics.Endpoint {
        let timings = lastResult?.timings
        return TextfileMetrics.Endpoint(
            name: endpoint.name,
            probeSucceeded: lastResult.map { $0.outcome == .success },
            phaseDurations: timings.map { timings in
                [("resolve", timings.resolve), ("connect", timings.connect), ("tls", timings.tls),
                 ("processing", timings.processing), ("transfer", timings.transfer)]
            } ?? [],
            state: state.status,
            earliestCertificateExpiry: lastExpiry.served?.timeIntervalSince1970,
            lastChainExpiry: lastExpiry.chain?.timeIntervalSince1970,
            pinFailures: pinFailures)
    }
}
