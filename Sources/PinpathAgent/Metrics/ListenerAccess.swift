import Glibc
import PinpathSecurity

/// Who may use the metrics listener (`metrics.basic_auth`, `metrics.probe_unauthenticated`), decided per route
/// before the route runs: every route but `/healthz` asks for the credentials when users are configured, and
/// `/probe` (which makes the agent connect where a client says) is refused on a listener other hosts can reach
/// unless clients prove who they are or the configuration says so.
///
/// Every route calls ``requirement(for:)`` first; the listener answers 401 or 403 itself, so a route never sees an
/// unauthenticated request.
struct ListenerAccess: Sendable, Equatable {
    /// The users of `metrics.basic_auth`; `nil` for none.
    var basicAuth: BasicAuthUsers?
    /// `metrics.tls`; `nil` for plain HTTP.
    var tls: ListenerTLS?
    /// `metrics.probe_unauthenticated: true`: `/probe` is served without credentials on any listener.
    var probeUnauthenticated = false
    /// Whether only this host can connect: a Unix socket, or a TCP listener on a loopback address.
    var isLocalOnly = true

    init(
        basicAuth: BasicAuthUsers? = nil, tls: ListenerTLS? = nil, probeUnauthenticated: Bool = false,
        listen: MetricsListenAddress? = nil
    ) {
        self.basicAuth = basicAuth
        self.tls = tls
        self.probeUnauthenticated = probeUnauthenticated
        isLocalOnly = listen.map(Self.isLocalOnly) ?? true
    }

    /// The routes served without credentials: what a load balancer or systemd checks.
    static let openRoutes: Set<String> = ["/healthz"]

    /// What a request for `route` (the path, without the query) needs before it is answered.
    enum Requirement: Equatable {
        /// Serve it.
        case open
        /// Check `Authorization: Basic` first; 401 without or with wrong credentials.
        case credentials
        /// 403 with this one-line reason, whatever the request carries.
        case refused(String)
        /// 421 with this one-line reason: the request names another host than this listener's.
        case misdirected(String)
    }

    /// The check every route makes first (``MetricsHTTPHandler`` runs it before dispatching), with the request's
    /// `Host` (nil when it sent none).
    func requirement(for route: String, host: String? = nil) -> Requirement {
        if Self.openRoutes.contains(route) { return .open }
        if let reason = hostRefusal(host) { return .misdirected(reason) }
        if route == "/probe", let reason = probeRefusal { return .refused(reason) }
        return basicAuth == nil ? .open : .credentials
    }

    /// Why a request naming `host` is refused, or `nil`: on a listener only this host can reach, the `Host` must
    /// name this host (`localhost`, a loopback address), as every client that can reach it writes it (a local
    /// Prometheus, curl, a browser through `ssh -L`). A web page whose name an attacker points at 127.0.0.1 (DNS
    /// rebinding) would otherwise read the status document, `/metrics` and `/probe` through the operator's browser
    /// as if it were the agent's own origin. A request without `Host` (HTTP/1.0) comes from no browser. Listeners
    /// other hosts can reach take any name (clients name the machine as they know it); their protection is
    /// `metrics.basic_auth` and client certificates.
    func hostRefusal(_ host: String?) -> String? {
        guard isLocalOnly, let host, !Self.namesThisHost(host) else { return nil }
        return
            "the Host header does not name this host (localhost or a loopback address), which a listener only this host can reach requires"
    }

    /// Whether a `Host` value (a name or an address, with or without a port) is `localhost` or a loopback address.
    static func namesThisHost(_ value: String) -> Bool {
        var host = Substring(value)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let rest = host[host.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && isPort(rest.dropFirst())) else { return false }
            host = host[host.index(after: host.startIndex)..<close]
        } else if let colon = host.lastIndex(of: ":") {
            guard isPort(host[host.index(after: colon)...]) else { return false }
            host = host[..<colon]
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        if host.lowercased() == "localhost" { return true }
        return isLocalOnly(.tcp(host: String(host), port: 0))
    }

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 5 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// Why `/probe` is refused on this listener, or `nil` when it is served: a listener other hosts can reach needs
    /// `metrics.basic_auth` or client certificates (`metrics.tls.client_ca`), or the explicit
    /// `metrics.probe_unauthenticated: true`.
    var probeRefusal: String? {
        let clientCertificates = tls?.context.requiresClientCertificate ?? false
        guard !isLocalOnly, basicAuth == nil, !clientCertificates, !probeUnauthenticated else { return nil }
        return
            "/probe is refused on a listener other hosts can reach without credentials: set metrics.basic_auth or metrics.tls.client_ca, or metrics.probe_unauthenticated: true to serve it to anyone"
    }

    /// Whether `address` is a Unix socket or a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104).
    static func isLocalOnly(_ address: MetricsListenAddress) -> Bool {
        switch address {
        case .unix: return true
        case .tcp(let host, _):
            var v4 = in_addr()
            if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
            var v6 = in6_addr()
            guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
            let bytes = withUnsafeBytes(of: v6) { Array($0) }
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127
        }
    }
}

/// The user and password of an `Authorization: Basic …` header (RFC 7617), or `nil` when the header is absent,
/// another scheme, not base64 or has no colon.
struct BasicCredentials {
    let user: String
    let password: String

    /// Headers longer than this are not decoded: no scraper's credentials come near it.
    static let maximumHeaderLength = 4096

    init?(header: String?) {
        guard let header, header.utf8.count <= Self.maximumHeaderLength else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Self.base64Decode(parts[1]),
            let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
        else { return nil }
        user = String(decoding: decoded[..<colon], as: UTF8.self)
        password = String(decoding: decoded[(colon + 1)...], as: UTF8.self)
    }

    private static func base64Decode(_ text: some StringProtocol) -> [UInt8]? {
        var values: [UInt8] = []
        var padding = 0
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z") where padding == 0: values.append(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z") where padding == 0: values.append(byte - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9") where padding == 0: values.append(byte - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "+") where padding == 0: values.append(62)
            case UInt8(ascii: "/") where padding == 0: values.append(63)
            case UInt8(ascii: "="): padding += 1
            default: return nil
            }
        }
        guard padding <= 2, (values.count + padding) % 4 == 0 || padding == 0, values.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            let a = chunk[chunk.startIndex]
            let b = chunk.count > 1 ? chunk[chunk.startIndex + 1] : 0
            let c = chunk.count > 2 ? chunk[chunk.startIndex + 2] : 0
            let d = chunk.count > 3 ? chunk[chunk.startIndex + 3] : 0
            bytes.append(a << 2 | b >> 4)
            if chunk.count > 2 { bytes.append(b << 4 | c >> 2) }
            if chunk.count > 3 { bytes.append(c << 6 | d) }
            index += 4
        }
        return bytes
    }
}

extension ListenerAccess {
    /// The header a 401 carries.
    static let challenge = #"Basic realm="pinpath""#
}

/// `metrics.tls`: the files as configured, and the context built from them when the configuration loaded (a
/// reload reads them again: certificate rotation is a SIGHUP).
struct ListenerTLS: Sendable, Equatable {
    var certificate: String
    var key: String
    var clientCA: String?
    var minimumVersion: TLSServerContext.MinimumVersion
    let context: TLSServerContext

    /// The settings, not the context: a reload of the same files is the same configuration.
    static func == (left: ListenerTLS, right: ListenerTLS) -> Bool {
        (left.certificate, left.key, left.clientCA, left.minimumVersion) == (
            right.certificate, right.key, right.clientCA, right.minimumVersion
        )
    }
}
