import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// What the agent keeps per endpoint: its configuration, its state machine, its expiry warnings and what
/// the metrics need of the last probe.
struct EndpointTracker: Sendable {
    /// The last probe, reduced to what the metrics show. Not the `ProbeResult`: that holds the handshake's
    /// certificates, and 10,000 endpoints' chains would cost hundreds of MiB.
    struct LastProbe: Sendable {
        var succeeded: Bool
        var timings: PhaseTimings?
        var statusCode: Int?
        var tlsVersion: String?
        /// Why it failed (``ProbeResult/errorCategory``); nil after a success.
        var failureCategory: FailureCategory?
        var earliestServedExpiry: Date?
        var verifiedChainExpiry: Date?
        var ocspResponseStatus: Int?
        /// What `revocation: ocsp` found in the last probe, and its answer's nextUpdate.
        var ocspStatus: OCSPCheck.Status?
        var ocspNextUpdate: Date?

        init(_ result: ProbeResult) {
            succeeded = result.outcome == .success
            timings = result.timings
            statusCode = result.statusCode
            tlsVersion = result.tlsVersion
            failureCategory = result.outcome == .success ? nil : result.errorCategory
            earliestServedExpiry = result.evaluation?.servedChain.map(\.notAfter).min()
            // As the README says: from a chain that validated only.
            verifiedChainExpiry = result.evaluation.flatMap { $0.chainValidated ? $0.verifiedChain.map(\.notAfter).min() : nil }
            ocspResponseStatus = result.evaluation?.ocspStaple?.status.metricValue
            ocspStatus = result.evaluation?.ocspCheck?.status
            ocspNextUpdate = result.evaluation?.ocspCheck?.nextUpdate
        }
    }

    var endpoint: EndpointConfiguration
    var state: EndpointState
    var expiry: ExpiryCheck
    var lastProbe: LastProbe?
    /// Pin failures since start that refused the connection, and those under report-only policies.
    var enforcedPinFailures = 0
    var reportOnlyPinFailures = 0
    /// The last OCSP status reported in `revocation.checked`: the event is written when it changes.
    var reportedOCSPStatus: OCSPCheck.Status?
    /// Bumped by a reload that changed the endpoint: results of probes started before are dropped.
    var generation: Int

    init(_ endpoint: EndpointConfiguration, generation: Int, thresholdsOfOne: Bool = false) {
        self.endpoint = endpoint
        self.generation = generation
        state =
            thresholdsOfOne
            ? EndpointState(failureThreshold: 1, successThreshold: 1)
            : EndpointState(failureThreshold: endpoint.failureThreshold, successThreshold: endpoint.successThreshold)
        expiry = ExpiryCheck(thresholds: endpoint.certExpiryWarnings)
    }

    /// The host the endpoint connects to, as the monitor watches it (brackets removed from IPv6 literals): its
    /// proxy's when it goes through one, its `address` when it has one.
    static func host(of endpoint: EndpointConfiguration) -> String? {
        // Through a proxy, the proxy is the only host the probe connects to: the one its reachability is.
        if let proxy = endpoint.proxy.settings.proxy(for: endpoint.url) { return proxy.host }
        // The name is not resolved at all: the address is what the gate judges and what the monitor watches.
        if let address = endpoint.address { return address.description }
        guard let host = endpoint.url.host(percentEncoded: false), !host.isEmpty else { return nil }
        return URLHost.withoutBrackets(host)
    }

    /// Whether the monitor says the endpoint can be tried, by the gate's rule (``WatchedHostVerdict``): its
    /// host's own verdict when it is watched (a name that failed to resolve is left to the probe, which
    /// reports it as a resolve failure), else the path's. A "not reachable" verdict on a name may only raise
    /// for the endpoints of ``hostVerdictMayOnlyRaise(_:)``: while the machine is on a network, they are tried.
    static func isReachable(_ endpoint: EndpointConfiguration, on path: NetworkPath) -> Bool {
        guard let host = host(of: endpoint) else { return path.status == .reachable }
        switch WatchedHostVerdict(host, on: path) {
        case .reachable, .leftToResolver: return true
        case .unreachable: return hostVerdictMayOnlyRaise(endpoint) && isOnNetwork(for: endpoint, on: path)
        case .notWatched: return path.status == .reachable
        }
    }

    /// Whether a "not reachable" verdict on the endpoint's host may only raise what is reported, never hold the
    /// endpoint while the machine is on a network: true for an endpoint no connectivity verdict may hold
    /// (``connectivityMayHold(_:)``: TLS, a policy, an https proxy) whose host (its proxy's, through one) is a
    /// name.
    ///
    /// The monitor's verdict on a name rests on the addresses a DNS answer gave it, and whoever answers DNS
    /// writes it: an unroutable address would make a pinned endpoint `unreachable` (no probe, no `down`, no
    /// `pin.failure`) while the attacker takes it over. So for such an endpoint only the kernel's word
    /// (``isOnNetwork(for:on:)``) holds it; it is probed with the name's verdict unable to refuse
    /// (``RequestOptions/nameVerdictMayRefuse``), and a probe whose every resolved address the gate refused is a
    /// failure (``EndpointProbe``). A "reachable" verdict still lets it be probed when the path is not (a host
    /// with a route of its own, over a VPN). A numeric host keeps the gate's rule: its verdict is a route look-up,
    /// the kernel's word. So do plain endpoints: whoever answers their DNS can rewrite their answers anyway.
    static func hostVerdictMayOnlyRaise(_ endpoint: EndpointConfiguration) -> Bool {
        guard !connectivityMayHold(endpoint), let host = host(of: endpoint) else { return false }
        return IPAddress(host) == nil
    }

    /// What a probe the reachability gate refused (`unreachable`) is: a `failure` for an endpoint whose host
    /// verdict may only raise (``hostVerdictMayOnlyRaise(_:)``) while the machine is on a network, since every
    /// address its name resolved to was then refused (the message names them); else `unreachable`, not tried.
    static func outcomeOfRefusedProbe(_ endpoint: EndpointConfiguration, on path: NetworkPath) -> ProbeResult.Outcome {
        hostVerdictMayOnlyRaise(endpoint) && isOnNetwork(for: endpoint, on: path) ? .failure : .unreachable
    }

    /// Whether the machine is on a network the endpoint's probes could take, by the kernel's word alone (no DNS):
    /// a family of its `ip_family` (either for `any`) has a default path, or an address on a usable interface
    /// (``NetworkPath/hasNetworkAddress(_:)``). The second is a network with routes but no default one (an
    /// internal network, a split VPN): there only the name's verdict, which DNS writes, would tell whether the
    /// host is behind one of its routes, and an unroutable answer would make the endpoint quiet.
    static func isOnNetwork(for endpoint: EndpointConfiguration, on path: NetworkPath) -> Bool {
        let families = endpoint.ipFamily.map { [$0] } ?? IPFamily.allCases
        return families.contains { path.path(for: $0) != nil || path.hasNetworkAddress($0) }
    }

    /// Why the endpoint is not to be probed now, or `nil` when it is: the path's rule (``isReachable(_:on:)``)
    /// first, then the connectivity check's verdict for plain endpoints outside the local network.
    ///
    /// Such plain endpoints are skipped rather than probed and reclassified, as NWPathMonitor's users do: through
    /// a portal or a dead upstream a probe only meets the portal's answer or a timeout, which says nothing about
    /// the endpoint, costs a request each, and would count toward `down`. The connectivity check is the one
    /// request that tells when it is over. `none` adds nothing: it comes from the path, whose own per-host
    /// verdict already decides (a host with a route of its own, over a VPN say, stays probed).
    static func blockingCause(
        _ endpoint: EndpointConfiguration, on path: NetworkPath, connectivity: ConnectivityState?
    ) -> EndpointState.Input? {
        guard isReachable(endpoint, on: path) else { return .pathUnreachable }
        let cause: EndpointState.Input
        switch connectivity {
        case .limited?: cause = .connectivityLimited
        case .portal?: cause = .captivePortal
        case .intercepted?: cause = .connectivityIntercepted
        case .some(.full), .some(.none), nil: return nil  // full, unknown yet, or `none` (the path's rule above decides)
        }
        return connectivityMayHold(endpoint) && !isOnLocalNetwork(endpoint, on: path) ? cause : nil
    }

    /// Whether a connectivity verdict may hold the endpoint: only a plain one, whose probe has no TLS handshake
    /// (http or tcp, not through an https proxy) and no security policy.
    ///
    /// Every verdict but `none` is made of what the network answered the check, which an attacker on the path
    /// writes: a 302 makes `portal`, any certificate `intercepted`. Holding a TLS endpoint on such a verdict
    /// would let that attacker silence the very probes that report the interception (a pin failure, a refused
    /// chain), so those are probed in every connectivity state and their failures count as any other.
    static func connectivityMayHold(_ endpoint: EndpointConfiguration) -> Bool {
        guard !endpoint.kind.usesTLS, endpoint.security == nil else { return false }
        return endpoint.proxy.settings.proxy(for: endpoint.url)?.scheme != .https
    }

    /// Whether the endpoint's host (its proxy's, through one) is on the local network: an address literal, or
    /// the address the monitor resolved its name to. An unresolved name counts as outside.
    static func isOnLocalNetwork(_ endpoint: EndpointConfiguration, on path: NetworkPath) -> Bool {
        guard let host = host(of: endpoint), let address = IPAddress(host) ?? path.target(host)?.address else { return false }
        return path.isOnLocalNetwork(address)
    }

    /// The metrics of this endpoint.
    var metrics: MetricsSnapshot.Endpoint {
        MetricsSnapshot.Endpoint(
            name: endpoint.name, lastProbe: lastProbe, kind: endpoint.kind, state: state.status,
            enforcedPinFailures: enforcedPinFailures, reportOnlyPinFailures: reportOnlyPinFailures)
    }
}

extension MetricsSnapshot.Endpoint {
    /// What a probe (`lastProbe`, nil before the first) of a `kind` shows: one reading for the endpoints' metrics
    /// and for a `/probe` answer.
    init(
        name: String, lastProbe: EndpointTracker.LastProbe?, kind: ServiceKind, state: EndpointState.Status,
        enforcedPinFailures: Int = 0, reportOnlyPinFailures: Int = 0
    ) {
        let timings = lastProbe?.timings
        self.init(
            name: name,
            probeSucceeded: lastProbe?.succeeded,
            probeDuration: timings?.total,
            phaseDurations: timings.map { $0.phases(of: kind).map { ($0.name, $0.seconds) } } ?? [],
            statusCode: lastProbe?.statusCode,
            tlsVersion: lastProbe?.tlsVersion, failureCategory: lastProbe?.failureCategory,
            state: state,
            earliestCertificateExpiry: lastProbe?.earliestServedExpiry?.timeIntervalSince1970,
            lastChainExpiry: lastProbe?.verifiedChainExpiry?.timeIntervalSince1970,
            enforcedPinFailures: enforcedPinFailures, reportOnlyPinFailures: reportOnlyPinFailures,
            ocspResponseStatus: lastProbe?.ocspResponseStatus, ocspStatus: lastProbe?.ocspStatus?.description,
            ocspNextUpdate: lastProbe?.ocspNextUpdate?.timeIntervalSince1970)
    }
}
