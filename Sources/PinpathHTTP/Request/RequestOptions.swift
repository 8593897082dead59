import PinpathReachability
import PinpathSecurity

/// How one request is sent: timeouts, redirects, the reachability gate and the trust policy.
public struct RequestOptions: Sendable {
    /// What to do when the reachability monitor says the target cannot be reached.
    public enum ReachabilityRequirement: Sendable, Equatable {
        /// Fail at once with ``HTTPError/Code/unreachable``, before any DNS query or connection (the default).
        case failFast
        /// Wait until the path is reachable again, at most this long, then fail as not reachable.
        case waitForConnectivity(Duration)
        /// Send regardless (the session's monitor is not asked).
        case ignore
    }

    /// The most time to connect (TCP, per address tried). Default 10 s.
    public var connectTimeout: Duration {
        _read { yield storage.values.pointee.connectTimeout }
        _modify { yield &values.connectTimeout }
    }
    /// The most time for the whole request, redirects included. Default 30 s.
    public var timeout: Duration {
        _read { yield storage.values.pointee.timeout }
        _modify { yield &values.timeout }
    }
    /// Follow redirects (301, 302, 303, 307, 308). On by default, as in AFNetworking and curl -L.
    public var followRedirects: Bool {
        _read { yield storage.values.pointee.followRedirects }
        _modify { yield &values.followRedirects }
    }
    /// The most redirects followed before failing with ``HTTPError/Code/tooManyRedirects``.
    public var maximumRedirects: Int {
        _read { yield storage.values.pointee.maximumRedirects }
        _modify { yield &values.maximumRedirects }
    }
    /// The reachability gate. Applies only when the session has a monitor.
    public var reachability: ReachabilityRequirement {
        _read { yield storage.values.pointee.reachability }
        _modify { yield &values.reachability }
    }
    /// Whether the monitor's "not reachable" verdict on a watched host *name* refuses the request at once (the
    /// default). That verdict rests on the addresses a DNS answer gave the monitor, maybe long ago, and whoever
    /// answers DNS writes it. With `false` (the agent's probes of TLS endpoints) it refuses only while the
    /// machine is on no network (of ``ipFamily``: no default path, no address on a usable interface), the
    /// kernel's word; otherwise libcurl resolves the name
    /// again and each address is checked against the kernel's routes before `connect()`, so the request fails
    /// ``HTTPError/Code/unreachable`` naming the addresses when none is usable. A "reachable" verdict admits
    /// either way (a host with a route of its own, over a VPN), and a numeric host is judged by its route.
    public var nameVerdictMayRefuse: Bool {
        _read { yield storage.values.pointee.nameVerdictMayRefuse }
        _modify { yield &values.nameVerdictMayRefuse }
    }
    /// Connect over this IP family only (the agent's `ip_family`); `nil`, the default, connects over either.
    public var ipFamily: IPFamily? {
        _read { yield storage.values.pointee.ipFamily }
        _modify { yield &values.ipFamily }
    }
    /// A policy for this request's host, instead of the per-host policies (the agent's explicit `policy`).
    /// Redirects to other hosts get the per-host policies for them (``policies`` and the session's).
    public var securityPolicy: SecurityPolicy? {
        _read { yield storage.values.pointee.securityPolicy }
        _modify { yield &values.securityPolicy }
    }
    /// The trust store for this request's host, instead of the session's.
    public var trustStore: TrustStore? {
        _read { yield storage.values.pointee.trustStore }
        _modify { yield &values.trustStore }
    }
    /// Per-host policies, with their trust stores, for this request and its redirects, in addition to the
    /// session's: every hop to a host without ``securityPolicy`` gets the strictest combination of the
    /// entries of both that match it, exactly as a first request to that host would (the agent passes all
    /// its configured policies here, so that a reload needs no new session).
    public var policies: HostPolicySet {
        _read { yield storage.values.pointee.policies }
        _modify { yield &values.policies }
    }
    /// Follow a redirect from an https URL to an http one. Off by default: such a redirect fails with
    /// ``HTTPError/Code/insecureRedirect`` before anything is sent to the http URL. When on, credential
    /// headers (``HeaderFields/isCredential(_:)``) are still never sent over the http hop.
    public var allowsInsecureRedirects: Bool {
        _read { yield storage.values.pointee.allowsInsecureRedirects }
        _modify { yield &values.allowsInsecureRedirects }
    }
    /// Follow redirects only to the first URL's host and port (where ``resolvedAddresses`` still applies): a
    /// redirect elsewhere fails with ``HTTPError/Code/insecureRedirect`` before anything is sent to it. The agent's
    /// target probes set it, since their admission checked only the target's own addresses. Off by default.
    public var redirectsStayOnHostAndPort: Bool {
        _read { yield storage.values.pointee.redirectsStayOnHostAndPort }
        _modify { yield &values.redirectsStayOnHostAndPort }
    }
    /// Keep every header the caller set when a redirect goes to another origin (scheme, host or port), as
    /// curl's `--location-trusted`. Off by default: such a hop keeps only headers that describe the client
    /// and the body (`Accept`, `Accept-Encoding`, `Accept-Language`, `User-Agent`, `Content-Type`,
    /// `Content-Length`, and `Range` and `If-Range`, which a resumed download needs); credentials and custom headers are dropped, and a hop that would send the body
    /// again (307, 308) is not followed (``HTTPError/Code/crossOriginBody``). When on, the body follows too.
    public var keepsHeadersAcrossOrigins: Bool {
        _read { yield storage.values.pointee.keepsHeadersAcrossOrigins }
        _modify { yield &values.keepsHeadersAcrossOrigins }
    }
    /// Open a new connection and close it afterwards, so that every request performs a full TLS handshake
    /// and so a full policy check (the agent's probes). Off by default: connections are reused.
    public var freshConnection: Bool {
        _read { yield storage.values.pointee.freshConnection }
        _modify { yield &values.freshConnection }
    }
    /// The proxies requests go through, chosen again for every redirect hop by its URL. Default
    /// ``ProxySettings/direct``: libcurl is told "no proxy" and never reads `https_proxy` or `http_proxy`
    /// itself; pass ``ProxySettings/environment(_:)`` to honour them. Through a proxy, the reachability gate
    /// asks about the proxy's host, and each TLS connection (the proxy's, the origin's inside the tunnel) is
    /// held to the policy of its own host.
    public var proxies: ProxySettings {
        _read { yield storage.values.pointee.proxies }
        _modify { yield &values.proxies }
    }
    /// Response bodies larger than this (after decoding their content coding) fail with
    /// ``HTTPError/Code/protocolError`` instead of exhausting memory. Default 64 MiB. Not for
    /// ``Session/stream(_:options:)``, whose bodies are neither collected nor decoded.
    public var maximumBodySize: Int {
        _read { yield storage.values.pointee.maximumBodySize }
        _modify { yield &values.maximumBodySize }
    }
    /// A client certificate for mutual TLS for this request, instead of the session's.
    public var clientCertificate: ClientCertificate? {
        _read { yield storage.values.pointee.clientCertificate }
        _modify { yield &values.clientCertificate }
    }
    /// For the TLS kinds, https included (``ServiceKind``): the name sent as SNI and checked against the
    /// certificate (and the one whose per-host policies apply; over https also the `Host` field), while the
    /// connection goes to the URL's host (curl's `--connect-to NAME:PORT:HOST:PORT`): a redirect back to this
    /// name and port goes there too. It never weakens the check: the name checked is this one. `nil`: the URL's
    /// host. Plain kinds (http, tcp) ignore it.
    public var serverName: String? {
        _read { yield storage.values.pointee.serverName }
        _modify { yield &values.serverName }
    }
    /// Addresses to connect to for given host names and ports instead of resolving them (curl's `--resolve`):
    /// the name stays the one SNI, `Host` and the per-host policies use, and the reachability gate judges the
    /// address. A hop to another host or port (a redirect) is not affected. With ``serverName``, the entry for
    /// the URL's host (the one connected to) applies. Refused through a proxy (``HTTPError/Code/invalidURL``,
    /// nothing sent): the proxy would connect to the name.
    public var resolvedAddresses: [ResolvedAddress] {
        _read { yield storage.values.pointee.resolvedAddresses }
        _modify { yield &values.resolvedAddresses }
    }
    /// For `tcp://` URLs: one exchange after connecting (``TCPExchange``); `nil` connects only.
    public var tcpExchange: TCPExchange? {
        _read { yield storage.values.pointee.tcpExchange }
        _modify { yield &values.tcpExchange }
    }
    /// For ``Session/stream(_:options:)``: how many body bytes may wait for the consumer before the transfer
    /// is paused (resumed when the consumer has taken them). Default 1 MiB. A paused stream holds this, one
    /// read more, and what its connection's socket buffers: a stream goes over HTTP/1.1 for that.
    public var streamBufferSize: Int {
        _read { yield storage.values.pointee.streamBufferSize }
        _modify { yield &values.streamBufferSize }
    }
    /// For ``Session/stream(_:options:)``: the body fails with ``HTTPError/Code/timedOut`` when no byte arrives
    /// for this long while the consumer is not the one holding the transfer up (a transfer paused for a slow
    /// consumer is not stalled). Default 30 s.
    public var stallTimeout: Duration {
        _read { yield storage.values.pointee.stallTimeout }
        _modify { yield &values.stallTimeout }
    }
    /// For ``Session/stream(_:options:)``: the most time for the body, from the head's arrival to its end;
    /// `nil`, the default, sets no total limit (``stallTimeout`` still applies).
    public var bodyTimeout: Duration? {
        _read { yield storage.values.pointee.bodyTimeout }
        _modify { yield &values.bodyTimeout }
    }
    /// Called with the transfer's progress (``TransferProgress``) at most every 100 ms, and once more when the
    /// transfer ends (complete or not), for ``Session/send(_:options:)`` and ``Session/stream(_:options:)``,
    /// uploads and downloads. It runs on the session's libcurl thread: return quickly, hand work elsewhere.
    /// A redirect hop's body is not reported; each hop reports its own upload.
    public var progress: (@Sendable (TransferProgress) -> Void)? {
        // `get`, not `_read`: Swift 6.3.1's -Onone code generation crashes yielding an optional closure.
        get { storage.values.pointee.progress }
        _modify { yield &values.progress }
    }
    /// Set on the request that asks an OCSP responder: its own TLS connection is not checked against a
    /// responder in turn (a loop), only against a staple.
    var isOCSPQuery: Bool {
        _read { yield storage.values.pointee.isOCSPQuery }
        _modify { yield &values.isOCSPQuery }
    }

    public init() { storage = Storage(Values()) }

    // The fields, in one box: options pass through several hands on every request (the session's redirect loop,
    // each hop, the transfer), and a copy then costs one retain instead of one per field (five copies and their
    // destruction were about 3,000 instructions per request). Held through a pointer, not as the box's stored
    // properties, which Swift checks for exclusive access at run time on every read. Copied on write.
    private var storage: Storage

    private var values: Values {
        get { storage.values.pointee }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.values.pointee) }
            yield &storage.values.pointee
        }
    }

    private struct Values {
        var connectTimeout: Duration = .seconds(10)
        var timeout: Duration = .seconds(30)
        var followRedirects: Bool = true
        var maximumRedirects: Int = 10
        var reachability: ReachabilityRequirement = .failFast
        var nameVerdictMayRefuse: Bool = true
        var ipFamily: IPFamily? = nil
        var securityPolicy: SecurityPolicy?
        var trustStore: TrustStore?
        var policies: HostPolicySet = HostPolicySet([])
        var allowsInsecureRedirects: Bool = false
        var redirectsStayOnHostAndPort: Bool = false
        var keepsHeadersAcrossOrigins: Bool = false
        var freshConnection: Bool = false
        var proxies: ProxySettings = ProxySettings.direct
        var maximumBodySize: Int = 64 << 20
        var clientCertificate: ClientCertificate?
        var serverName: String?
        var resolvedAddresses: [ResolvedAddress] = []
        var tcpExchange: TCPExchange?
        var streamBufferSize: Int = 1 << 20
        var stallTimeout: Duration = .seconds(30)
        var bodyTimeout: Duration? = nil
        var progress: (@Sendable (TransferProgress) -> Void)?
        var isOCSPQuery: Bool = false
    }

    /// `@unchecked Sendable`: its values are written only while one ``RequestOptions`` holds it (copy on write).
    private final class Storage: @unchecked Sendable {
        let values: UnsafeMutablePointer<Values>

        init(_ initial: Values) {
            values = .allocate(capacity: 1)
            values.initialize(to: initial)
        }

        deinit {
            values.deinitialize(count: 1)
            values.deallocate()
        }
    }
}
