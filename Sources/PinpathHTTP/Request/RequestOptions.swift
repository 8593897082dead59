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
    public var connectTimeout: Duration = .seconds(10)
    /// The most time for the whole request, redirects included. Default 30 s.
    public var timeout: Duration = .seconds(30)
    /// Follow redirects (301, 302, 303, 307, 308). On by default, as in AFNetworking and curl -L.
    public var followRedirects = true
    /// The most redirects followed before failing with ``HTTPError/Code/tooManyRedirects``.
    public var maximumRedirects = 10
    /// The reachability gate. Applies only when the session has a monitor.
    public var reachability: ReachabilityRequirement = .failFast
    /// Whether the monitor's "not reachable" verdict on a watched host *name* refuses the request at once (the
    /// default). That verdict rests on the addresses a DNS answer gave the monitor, maybe long ago, and whoever
    /// answers DNS writes it. With `false` (the agent's probes of TLS endpoints) it refuses only while the
    /// machine is on no network (of ``ipFamily``: no default path, no address on a usable interface), the
    /// kernel's word; otherwise libcurl resolves the name
    /// again and each address is checked against the kernel's routes before `connect()`, so the request fails
    /// ``HTTPError/Code/unreachable`` naming the addresses when none is usable. A "reachable" verdict admits
    /// either way (a host with a route of its own, over a VPN), and a numeric host is judged by its route.
    public var nameVerdictMayRefuse = true
    /// Connect over this IP family only (the agent's `ip_family`); `nil`, the default, connects over either.
    public var ipFamily: IPFamily? = nil
    /// A policy for this request's host, instead of the per-host policies (the agent's explicit `policy`).
    /// Redirects to other hosts get the per-host policies for them (``policies`` and the session's).
    public var securityPolicy: SecurityPolicy?
    /// The trust store for this request's host, instead of the session's.
    public var trustStore: TrustStore?
    /// Per-host policies, with their trust stores, for this request and its redirects, in addition to the
    /// session's: every hop to a host without ``securityPolicy`` gets the strictest combination of the
    /// entries of both that match it, exactly as a first request to that host would (the agent passes all
    /// its configured policies here, so that a reload needs no new session).
    public var policies = HostPolicySet([])
    /// Follow a redirect from an https URL to an http one. Off by default: such a redirect fails with
    /// ``HTTPError/Code/insecureRedirect`` before anything is sent to the http URL. When on, credential
    /// headers (``HeaderFields/isCredential(_:)``) are still never sent over the http hop.
    public var allowsInsecureRedirects = false
    /// Follow redirects only to the first URL's host and port (where ``resolvedAddresses`` still applies): a
    /// redirect elsewhere fails with ``HTTPError/Code/insecureRedirect`` before anything is sent to it. The agent's
    /// target probes set it, since their admission checked only the target's own addresses. Off by default.
    public var redirectsStayOnHostAndPort = false
    /// Keep every header the caller set when a redirect goes to another origin (scheme, host or port), as
    /// curl's `--location-trusted`. Off by default: such a hop keeps only headers that describe the client
    /// and the body (`Accept`, `Accept-Encoding`, `Accept-Language`, `User-Agent`, `Content-Type`,
    /// `Content-Length`, and `Range` and `If-Range`, which a resumed download needs); credentials and custom headers are dropped, and a hop that would send the body
    /// again (307, 308) is not followed (``HTTPError/Code/crossOriginBody``). When on, the body follows too.
    public var keepsHeadersAcrossOrigins = false
    /// Open a new connection and close it afterwards, so that every request performs a full TLS handshake
    /// and so a full policy check (the agent's probes). Off by default: connections are reused.
    public var freshConnection = false
    /// The proxies requests go through, chosen again for every redirect hop by its URL. Default
    /// ``ProxySettings/direct``: libcurl is told "no proxy" and never reads `https_proxy` or `http_proxy`
    /// itself; pass ``ProxySettings/environment(_:)`` to honour them. Through a proxy, the reachability gate
    /// asks about the proxy's host, and each TLS connection (the proxy's, the origin's inside the tunnel) is
    /// held to the policy of its own host.
    public var proxies = ProxySettings.direct
    /// Response bodies larger than this (after decoding their content coding) fail with
    /// ``HTTPError/Code/protocolError`` instead of exhausting memory. Default 64 MiB. Not for
    /// ``Session/stream(_:options:)``, whose bodies are neither collected nor decoded.
    public var maximumBodySize = 64 << 20
    /// A client certificate for mutual TLS for this request, instead of the session's.
    public var clientCertificate: ClientCertificate?
    /// For the TLS kinds, https included (``ServiceKind``): the name sent as SNI and checked against the
    /// certificate (and the one whose per-host policies apply; over https also the `Host` field), while the
    /// connection goes to the URL's host (curl's `--connect-to NAME:PORT:HOST:PORT`): a redirect back to this
    /// name and port goes there too. It never weakens the check: the name checked is this one. `nil`: the URL's
    /// host. Plain kinds (http, tcp) ignore it.
    public var serverName: String?
    /// Addresses to connect to for given host names and ports instead of resolving them (curl's `--resolve`):
    /// the name stays the one SNI, `Host` and the per-host policies use, and the reachability gate judges the
    /// address. A hop to another host or port (a redirect) is not affected. With ``serverName``, the entry for
    /// the URL's host (the one connected to) applies. Refused through a proxy (``HTTPError/Code/invalidURL``,
    /// nothing sent): the proxy would connect to the name.
    public var resolvedAddresses: [ResolvedAddress] = []
    /// For `tcp://` URLs: one exchange after connecting (``TCPExchange``); `nil` connects only.
    public var tcpExchange: TCPExchange?
    /// For ``Session/stream(_:options:)``: how many body bytes may wait for the consumer before the transfer
    /// is paused (resumed when the consumer has taken them). Default 1 MiB. A paused stream holds this, one
    /// read more, and what its connection's socket buffers: a stream goes over HTTP/1.1 for that.
    public var streamBufferSize = 1 << 20
    /// For ``Session/stream(_:options:)``: the body fails with ``HTTPError/Code/timedOut`` when no byte arrives
    /// for this long while the consumer is not the one holding the transfer up (a transfer paused for a slow
    /// consumer is not stalled). Default 30 s.
    public var stallTimeout: Duration = .seconds(30)
    /// For ``Session/stream(_:options:)``: the most time for the body, from the head's arrival to its end;
    /// `nil`, the default, sets no total limit (``stallTimeout`` still applies).
    public var bodyTimeout: Duration? = nil
    /// Called with the transfer's progress (``TransferProgress``) at most every 100 ms, and once more when the
    /// transfer ends (complete or not), for ``Session/send(_:options:)`` and ``Session/stream(_:options:)``,
    /// uploads and downloads. It runs on the session's libcurl thread: return quickly, hand work elsewhere.
    /// A redirect hop's body is not reported; each hop reports its own upload.
    public var progress: (@Sendable (TransferProgress) -> Void)?
    /// Set on the request that asks an OCSP responder: its own TLS connection is not checked against a
    /// responder in turn (a loop), only against a staple.
    var isOCSPQuery = false

    public init() {}
}
