import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// `tls://` and `tcp://` checks without a proxy, on the session's handshake engine instead of a libcurl transfer:
/// one thread for all of them, and for `tls://` one shared `SSL_CTX` per client identity instead of a context per
/// connection. The gate has run; the OCSP responder's retry, the expiry's possession proof and the errors are the
/// session's, as for a transfer (``sendOnce``).
extension Session {
    /// Drops the shared TLS contexts of the `tls://` checks (a reload): the next checks build them again, so a
    /// client certificate no longer configured is not kept. Handshakes under way keep theirs.
    package func reloadCheckContexts() { tlsContexts.removeAll() }

    /// Whether a hop is a check the handshake engine runs: `tls://` or `tcp://`, directly. Through a proxy (a
    /// CONNECT tunnel), and every other kind, it is libcurl's.
    static func runsOnHandshakeEngine(_ kind: ServiceKind, proxy: Proxy?) -> Bool {
        proxy == nil && (kind == .tls || kind == .tcp)
    }

    /// One check: resolves `dialledHost` (no look-up for an address) within the connection phase, then hands the
    /// addresses of ``RequestOptions/ipFamily`` to the engine, which checks each with the reachability gate before
    /// connecting. Cancelling the task cancels the check and closes its socket.
    /// - Parameters:
    ///   - host: the name the handshake is for (SNI, the verifier's host).
    ///   - dialledHost: where the connection goes (the URL's host, or a server name's or resolved address's).
    ///   - verifier: for `tls://`, the verifier of this attempt.
    func checkConnection(
        _ request: SessionRequest, kind: ServiceKind, host: String, dialledHost: String, port: Int, options: RequestOptions,
        verifier: HandshakeVerifier?, label: String
    ) async -> Result<SessionResponse, HTTPError> {
        let started = ContinuousClock.now
        let deadline = started + options.timeout
        let connectDeadline = min(deadline, started + options.connectTimeout)
        let addresses: [IPAddress]
        switch await addressesToTry(dialledHost, family: options.ipFamily, until: connectDeadline, label: label) {
        case .success(let found): addresses = found
        case .failure(var error):
            // How long it took, no phase reached, as a libcurl transfer that failed to resolve reports it.
            var timings = PhaseTimings()
            timings.total = (ContinuousClock.now - started).inSeconds
            timings.phasesReached = []
            error.timings = timings
            return .failure(error)
        }
        var tls: HandshakeTLS?
        if kind == .tls {
            guard let verifier else { return .failure(HTTPError(.engineUnavailable, "\(label): a tls check without a verifier")) }
            let certificate = options.clientCertificate ?? configuration.clientCertificate
            let terms = TLSClientTerms(
                clientCertificate: certificate.map {
                    ClientCertificateFiles(certificatePath: $0.certificatePath, keyPath: $0.keyPath, password: $0.password)
                })
            // Off the cooperative pool and bounded by the check's deadline: a client certificate's files may sit on
            // a file system that does not answer, and only the checks of that certificate may wait for it.
            do {
                tls = HandshakeTLS(
                    context: try await tlsContexts.context(for: terms, deadline: deadline), serverName: host, verifier: verifier)
            } catch {
                let code: HTTPError.Code =
                    switch error.code {
                    case .timedOut: .timedOut
                    case .cancelled: .cancelled
                    default: .tlsFailed
                    }
                return .failure(HTTPError(code, "\(label): \(error.message)"))
            }
        }
        let check = HandshakeCheck(
            plan: HandshakeCheck.Plan(
                url: request.url, label: label, host: dialledHost, port: port, addresses: HandshakeCheck.interleavingFamilies(addresses),
                addressCheck: options.reachability == .ignore ? nil : gate?.addressCheck, started: started, resolved: .now,
                connectDeadline: connectDeadline, deadline: deadline, tls: tls,
                exchange: kind == .tcp ? options.tcpExchange : nil))
        return await handshakes.run(check)
    }

    /// The addresses to try for `host` of `family` (any when `nil`): the address itself, or what the resolver
    /// answers before `deadline` (on pinpath's blocking pool, never the engine's thread). The host is the URL's,
    /// percent-decoded: messages escape it (a `%0A` in a scraper's target is a line break once decoded).
    private func addressesToTry(
        _ host: String, family: IPFamily?, until deadline: ContinuousClock.Instant, label: String
    ) async -> Result<[IPAddress], HTTPError> {
        if let address = IPAddress(host) {
            // libcurl's category and words for an address of the other family.
            if let family, address.family != family {
                return .failure(
                    HTTPError(.connectFailed, "\(label): Couldn't connect to server (\(host) is not an \(family.rawValue) address)"))
            }
            return .success([address])
        }
        let started = ContinuousClock.now
        let timeout = started.duration(to: deadline)
        guard timeout > .zero, let resolved = await HostResolver.addresses(of: host, timeout: timeout) else {
            // libcurl's words and categories: a resolver that did not answer in time, or a name that does not resolve.
            if ContinuousClock.now >= deadline {
                let elapsed = (ContinuousClock.now - started).wholeMilliseconds
                return .failure(HTTPError(.timedOut, "\(label): Resolving timed out after \(elapsed) milliseconds"))
            }
            return .failure(HTTPError(.resolveFailed, "\(label): Could not resolve host: \(UntrustedText.escaped(host))"))
        }
        guard let family else { return .success(resolved) }
        let usable = resolved.filter { $0.family == family }
        guard !usable.isEmpty else {
            return .failure(
                HTTPError(
                    .resolveFailed,
                    "\(label): Could not resolve host: \(UntrustedText.escaped(host)) (it has no \(family.rawValue) address)"))
        }
        return .success(usable)
    }
}
