import FoundationEssentials
import PinpathSecurity

/// OCSP responders asked through the session's own gates, for ``RevocationMode/ocsp``.
extension Session: OCSPResponderClient {
    /// The longest an OCSP responder is given: a monitoring probe must not hang on a slow responder.
    static let ocspTimeout: Duration = .seconds(10)

    /// Asks `query`'s responder with the session's default options; see ``ask(_:options:)``.
    public func ask(_ query: OCSPQuery) async -> Result<[UInt8], OCSPResponderFailure> {
        await ask(query, options: configuration.defaultOptions)
    }

    /// POSTs `query` to its responder like any request of the session: the reachability gate, the responder
    /// host's own policy and trust store when the URL is https (the session's and `options`' per-host
    /// policies; never the policy of the server whose leaf is asked about), no redirects (a responder that
    /// redirects is unusable: RFC 6960 gives it no reason to), at most ``OCSPQuery/maximumResponseSize``
    /// bytes, within ``ocspTimeout`` and half of `options`' timeout. Returns the body of a 200 answer.
    /// - Parameter options: the request's options that led to the question: their reachability requirement,
    ///   address family, proxies, per-host policies and timeout carry over.
    func ask(_ query: OCSPQuery, options: RequestOptions) async -> Result<[UInt8], OCSPResponderFailure> {
        var asking = RequestOptions()
        // Half of what is left at most: the connection that follows needs time too.
        asking.timeout = min(options.timeout / 2, Self.ocspTimeout)
        asking.connectTimeout = min(options.connectTimeout, asking.timeout)
        asking.followRedirects = false
        asking.maximumBodySize = OCSPQuery.maximumResponseSize
        asking.reachability = options.reachability
        asking.nameVerdictMayRefuse = options.nameVerdictMayRefuse
        asking.ipFamily = options.ipFamily
        asking.proxies = options.proxies
        asking.policies = options.policies
        asking.isOCSPQuery = true
        var headers = HeaderFields()
        headers.add(name: "Content-Type", value: "application/ocsp-request")
        headers.add(name: "Accept", value: "application/ocsp-response")
        let request = SessionRequest(method: .post, url: query.responderURL, headers: headers, body: .bytes(query.requestDER))
        let response: SessionResponse
        do {
            response = try await send(request, options: asking)
        } catch {
            return .failure(OCSPResponderFailure(error.message))
        }
        guard response.statusCode == 200 else {
            let redirect = (300..<400).contains(response.statusCode) ? " (a redirect, which pinpath does not follow)" : ""
            return .failure(OCSPResponderFailure("it answered HTTP \(response.statusCode)\(redirect)"))
        }
        return .success(response.body)
    }

    /// Asks `query`'s responder and keeps what came of it in ``ocspResponses`` for the handshake that follows.
    func askResponder(_ query: OCSPQuery, options: RequestOptions) async {
        let reply = await ask(query, options: options)
        ocspResponses.record(reply, for: query, now: Date())
    }
}
