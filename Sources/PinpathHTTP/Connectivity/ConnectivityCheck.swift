import FoundationEssentials
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// A connectivity check, as NetworkManager's `[connectivity]`: one plain request to a URL whose answer is
/// known (HTTP 204 with an empty body by default), telling a working internet from a captive portal or a
/// dead upstream, which every local check (links, routes) reports as fine.
///
/// ```swift
/// let check = ConnectivityCheck(url: URL(string: "http://connectivity-check.example/generate_204")!)
/// let verdict = await session.checkConnectivity(check)   // .full, .portal, .intercepted, .limited or .none
/// ```
public struct ConnectivityCheck: Sendable, Equatable {
    /// The URL asked: http (captive portals intercept plain HTTP, and so can anyone on the path: a plain check
    /// proves nothing) or https (a certificate the check's policy refuses is then `intercepted`: something in
    /// the way answered with another certificate).
    public var url: URL
    /// The status that means `full`. Default 204.
    public var expectedStatus: Int
    /// Text the body must contain for `full`; `nil` with status 204 means an empty body, as NetworkManager's
    /// default; with another status, any body.
    public var expectedBody: String?
    /// The most time the check may take; longer is `limited`. Default 10 s.
    public var timeout: Duration
    /// For an https URL, the policy its handshake is held to (a private CA's, pins); `nil` is chain and host
    /// name against ``trustStore``. A check held to the wrong store would call every answer `intercepted`.
    public var securityPolicy: SecurityPolicy?
    /// The store that policy trusts; `nil` is the session's (the system's).
    public var trustStore: TrustStore?

    public init(
        url: URL, expectedStatus: Int = 204, expectedBody: String? = nil, timeout: Duration = .seconds(10),
        securityPolicy: SecurityPolicy? = nil, trustStore: TrustStore? = nil
    ) {
        self.url = url
        self.expectedStatus = expectedStatus
        self.expectedBody = expectedBody
        self.timeout = timeout
        self.securityPolicy = securityPolicy
        self.trustStore = trustStore
    }

    /// How the check is sent: redirects not followed (a redirect is the portal's signal), a fresh connection
    /// (a pooled one would say nothing about the upstream now), and the reachability gate failing fast.
    var requestOptions: RequestOptions {
        var options = RequestOptions()
        options.followRedirects = false
        options.freshConnection = true
        options.timeout = timeout
        options.connectTimeout = timeout
        options.reachability = .failFast
        options.maximumBodySize = 1 << 20
        options.securityPolicy = securityPolicy
        options.trustStore = trustStore
        return options
    }

    // MARK: The verdict (pure)

    /// The verdict when the path has no route out: `none`, without sending anything.
    public static let withoutPath = ConnectivityVerdict(state: .none, reason: "no_route")

    /// The verdict on the check's answer.
    public func verdict(on response: SessionResponse) -> ConnectivityVerdict {
        let status = response.statusCode
        if (300...399).contains(status) {
            // The Location's host only: a portal's URL carries session tokens in its query.
            let target =
                response.headers["Location"].flatMap { URL(string: $0, relativeTo: url)?.host(percentEncoded: false) }
                .map { " to \(Self.quotedHost($0))" } ?? " without a Location"
            return ConnectivityVerdict(state: .portal, reason: "redirected (\(status))\(target)", timings: response.timings)
        }
        guard status == expectedStatus else {
            return ConnectivityVerdict(
                state: .portal, reason: "status \(status), expected \(expectedStatus)", timings: response.timings)
        }
        let body = String(decoding: response.body, as: UTF8.self)
        if let expectedBody, !body.contains(expectedBody) {
            return ConnectivityVerdict(
                state: .portal, reason: "the body does not contain \"\(expectedBody)\"", timings: response.timings)
        }
        if expectedBody == nil && status == 204 && !response.body.isEmpty {
            return ConnectivityVerdict(
                state: .portal, reason: "status 204 with a body of \(response.body.count) bytes, expected none",
                timings: response.timings)
        }
        return ConnectivityVerdict(state: .full, reason: "answered \(status) as expected", timings: response.timings)
    }

    /// The longest host a verdict quotes, in bytes: a DNS name's limit (RFC 1035). Whoever answers the check
    /// chooses the Location, and the reason reaches every event and terminal that shows the verdict.
    static let maximumQuotedHostBytes = 253

    /// `host` as a reason quotes it: whole when it could be a DNS name's length, else cut, saying how long it was.
    /// Escaping is for whoever shows the reason (`UntrustedText`): JSON keeps the characters exact.
    static func quotedHost(_ host: String) -> String {
        let length = host.utf8.count
        guard length > maximumQuotedHostBytes else { return host }
        return UntrustedText.truncated(host, maximumUTF8Bytes: maximumQuotedHostBytes) + " (a host of \(length) bytes)"
    }

    /// The verdict on a check that got no acceptable answer.
    public func verdict(on error: HTTPError) -> ConnectivityVerdict {
        let reason = "\(error.code): \(error.message)"
        switch error.code {
        case .unreachable:
            return ConnectivityVerdict(state: .none, reason: error.reachability?.reason?.rawValue ?? "no_route")
        case .tlsInvalid, .tlsExpired, .policyRejected, .revoked:
            // A certificate was presented and the check's policy refused it: someone intercepts TLS, a portal or
            // an attacker. Not `portal`: that is the answer of a network one may log in to, this is not.
            return ConnectivityVerdict(state: .intercepted, reason: reason, timings: error.response?.timings)
        default:
            // Every other failure, a TLS handshake that never reached a certificate among them (a reset, an
            // end of stream, garbage, a wrong version, an alert): no usable answer. Anyone who can reset a
            // connection can produce it, so it is not the critical `intercepted`.
            return ConnectivityVerdict(state: .limited, reason: reason, timings: error.response?.timings)
        }
    }
}

extension Session {
    /// Runs a connectivity check through this session: `none` at once, with nothing sent, when the session's
    /// monitor says the path has no route out; otherwise one request, gated like any other, judged by
    /// ``ConnectivityCheck/verdict(on:)-(SessionResponse)``.
    public func checkConnectivity(_ check: ConnectivityCheck) async -> ConnectivityVerdict {
        if let monitor, monitor.currentPath.status != .reachable { return ConnectivityCheck.withoutPath }
        do throws(HTTPError) {
            return check.verdict(on: try await send(SessionRequest(method: .get, url: check.url), options: check.requestOptions))
        } catch {
            return check.verdict(on: error)
        }
    }
}
