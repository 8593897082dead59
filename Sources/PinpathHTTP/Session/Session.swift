import FoundationEssentials
import Glibc
import PinpathReachability
import PinpathSecurity
import PinpathSupport
import Synchronization

/// Sends HTTP(S) requests through two gates: the reachability monitor before connecting, and the security
/// policy inside the TLS handshake, before any request byte leaves: AFNetworking's `AFURLSession` core for
/// Linux, on libcurl's OpenSSL build. Its serializers and `AFHTTPSessionManager`'s calls (`get`, `post`…)
/// are `PinpathSerialization`'s `SessionManager`.
///
/// One session drives all its requests on one libcurl thread, and its `tls://` and `tcp://` checks made without
/// a proxy on one thread of its own (OpenSSL driven directly, one shared TLS context per client identity); share
/// it. Its methods may be called from any task; cancelling the task cancels the transfer or the check.
public final class Session: Sendable {
    /// What every request of the session shares.
    public struct Configuration: Sendable {
        /// Sent with every request unless the request sets the same field: `User-Agent` and
        /// `Accept-Language` by default.
        public var defaultHeaders: HeaderFields
        /// Per-host security policies (pins) and their trust stores; the entries matching a host combine into
        /// the strictest (``HostPolicySet``). Hosts with no policy get chain and host-name validation.
        public var policies: HostPolicySet
        /// The trust anchors; `nil` is the system's store (OpenSSL's defaults, `SSL_CERT_FILE`/`SSL_CERT_DIR`).
        public var trustStore: TrustStore?
        /// A client certificate for mutual TLS.
        public var clientCertificate: ClientCertificate?
        /// Options for requests that give none.
        public var defaultOptions: RequestOptions

        public init(
            defaultHeaders: HeaderFields = Session.standardHeaders, policies: HostPolicySet = HostPolicySet([]),
            trustStore: TrustStore? = nil, clientCertificate: ClientCertificate? = nil, defaultOptions: RequestOptions = RequestOptions()
        ) {
            self.defaultHeaders = defaultHeaders
            self.policies = policies
            self.trustStore = trustStore
            self.clientCertificate = clientCertificate
            self.defaultOptions = defaultOptions
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// The monitor the reachability gate asks; `nil` sends without asking.
    public let monitor: ReachabilityMonitor?
    private let engine: TransferEngine
    let gate: ReachabilityGate?
    private let systemTrustStore = Mutex<TrustStore?>(nil)
    private let chainValidation: SecurityPolicy
    /// The answers of OCSP responders fetched for the session's handshakes under ``RevocationMode/ocsp``.
    public let ocspResponses = OCSPResponseCache()
    /// The `tls://` and `tcp://` checks made without a proxy (``checkConnection(_:kind:host:dialledHost:port:options:verifier:label:)``);
    /// its thread starts with the first.
    let handshakes = HandshakeEngine()
    /// The shared client TLS contexts of those checks: one per client identity, built once.
    let tlsContexts = TLSClientContexts()

    /// Creates a session and starts its libcurl thread.
    /// - Parameter monitor: the reachability monitor to gate requests with.
    /// - Throws: ``HTTPError`` `engineUnavailable` when libcurl is not the OpenSSL build.
    public init(_ configuration: Configuration = Configuration(), monitor: ReachabilityMonitor? = nil) throws(HTTPError) {
        self.configuration = configuration
        self.monitor = monitor
        engine = try TransferEngine()
        gate = monitor.map(ReachabilityGate.init)
        do {
            chainValidation = try SecurityPolicy(mode: .none)
        } catch {
            throw HTTPError(.engineUnavailable, "cannot create the default policy: \(error)")
        }
    }

    /// Cancels the requests in flight (each fails with ``HTTPError/Code/cancelled``), ends the session's libcurl
    /// thread and its handshake engine's and waits for them; later requests fail with `cancelled` at once. Idempotent.
    ///
    /// Call it before the process exits while requests may still be running: OpenSSL's exit handler frees
    /// tables that a handshake on the session's thread may be reading at that moment.
    public func shutdown() {
        engine.stop()
        handshakes.stop()
    }

    /// The session's libcurl thread as an executor. A task that sends many requests can prefer it
    /// (`withTaskExecutorPreference`, `addTask(executorPreference:)`): its requests then cross no thread, neither to
    /// start a transfer nor to resume with the response. Keep such a task short of blocking work: while it runs,
    /// no transfer of the session makes progress. After ``shutdown()``, its jobs run on the global executor.
    public var executor: any TaskExecutor { engine.executor }

    /// libcurl's version and TLS backend, after checking that it is the OpenSSL build.
    public static func engineVersion() throws(HTTPError) -> String { try CurlRuntime.check() }

    /// Sends a request (following redirects unless the options say not to) and returns the final response,
    /// whatever its status. Status and content-type validation are the response serializers' job.
    ///
    /// Every hop is held to the policy of its own host: the request's ``RequestOptions/securityPolicy`` for
    /// the host it names, otherwise the strictest combination of the session's and the options' per-host
    /// policies that match, with their trust store. A redirect from https to http is refused and one to
    /// another origin keeps only the safe headers, unless the options allow either (``Redirect``).
    /// A hop may connect elsewhere than its URL's host (``RequestOptions/serverName``,
    /// ``RequestOptions/resolvedAddresses``): the reachability gate then judges the host or address dialled,
    /// while the handshake and the policy keep the name.
    /// - Throws: ``HTTPError``: not reachable, policy rejection (with the evaluation; also when the matching
    ///   policies name different trust stores), TLS, insecure redirect, connection, timeout, protocol, too
    ///   many redirects, cancelled; `invalidURL` for a hop that must connect elsewhere through a proxy.
    public func send(_ request: SessionRequest, options: RequestOptions? = nil) async throws(HTTPError) -> SessionResponse {
        try await follow(request, options: options ?? configuration.defaultOptions, streaming: false).response
    }

    /// Sends `request` as ``send(_:options:)`` does (both gates, redirects followed hop by hop, each hop held to
    /// its host's policy) and returns as soon as the final response's header section has arrived; its body then
    /// arrives through ``StreamedResponse/body``, with back-pressure (``RequestOptions/streamBufferSize``).
    ///
    /// ``RequestOptions/timeout`` bounds the time until the final head; the body then fails when no byte arrives
    /// for ``RequestOptions/stallTimeout`` while the consumer is reading, or past ``RequestOptions/bodyTimeout``.
    /// ``RequestOptions/maximumBodySize`` does not apply: the consumer decides. A redirect hop's body is
    /// discarded and its connection closed.
    ///
    /// The body is not decoded: its bytes are the ones the server sent, in the coding the head's
    /// `Content-Encoding` names (a server may use one the request did not ask for). No `Accept-Encoding` is
    /// added; the request's own is sent as it is. A consumer that wants decoded bytes decodes them itself,
    /// with a bound of its own on the output (a few hundred KB of gzip can be gigabytes). ``send(_:options:)``
    /// decodes, within ``RequestOptions/maximumBodySize``. A head whose `Transfer-Encoding` names a coding
    /// other than `chunked` is refused (`protocolError`, before any body byte): libcurl 7.88 would decode it
    /// whatever was asked, a whole read at once, and a paused stream would hold the decoded bytes.
    ///
    /// A stream goes over HTTP/1.1, even to a server that offers HTTP/2 and on a session that holds an HTTP/2
    /// connection to it: TCP's flow control then holds back a paused stream. Over HTTP/2 pausing cannot take
    /// back the window credit a stream was granted (32 MiB per stream in libcurl 7.88, with no option to lower
    /// it), and whatever arrives for a paused stream while the shared connection is read for another transfer
    /// waits in memory: up to 32 MiB per paused stream.
    /// - Throws: ``HTTPError``, what ``send(_:options:)`` throws up to the head; `invalidURL` for a URL that is
    ///   not http or https.
    public func stream(_ request: SessionRequest, options: RequestOptions? = nil) async throws(HTTPError) -> StreamedResponse {
        let (head, transfer) = try await follow(request, options: options ?? configuration.defaultOptions, streaming: true)
        guard let transfer, let channel = transfer.bodyChannel else {
            throw HTTPError(.engineUnavailable, "\(request.method) \(request.displayURL): a streamed transfer without its body channel")
        }
        return StreamedResponse(head: head, body: ResponseBodyStream(channel: channel, transfer: transfer, engine: engine))
    }

    /// The hops of one request, redirects followed: the final response with the transfer that read it (for a
    /// stream, still reading its body).
    ///
    /// `nonisolated(nonsending)`, as ``sendOnce(_:options:policies:connectHost:streaming:)`` and ``run(_:)``: they run
    /// where `send` runs, without the executor check (a hop) a plain nonisolated async function makes when it is
    /// entered and when it returns, about 170 instructions each.
    nonisolated(nonsending) private func follow(
        _ request: SessionRequest, options: RequestOptions, streaming: Bool
    ) async throws(HTTPError) -> (response: SessionResponse, transfer: Transfer?) {
        let deadline = ContinuousClock.now + options.timeout
        var request = withDefaultHeaders(request)
        // A server name for a TLS kind: the request names it (so its policy, its check and over https its Host
        // field apply) and connects to the URL's host, as curl's --connect-to.
        var serverNameRoute: ServerNameRoute?
        if let serverName = options.serverName, let kind = request.kind, kind.usesTLS,
            let host = request.url.host(percentEncoded: false), let port = request.url.port ?? kind.defaultPort
        {
            serverNameRoute = ServerNameRoute(name: HostPattern.canonicalHost(serverName), port: port, connectHost: host)
            request.url = try Self.url(request.url, withHost: serverName, label: "\(request.method) \(request.displayURL)")
        }
        // Its host is read and canonicalised only after a redirect: that costs more than the rest of a request's setup.
        let originURL = request.url
        let policies = HostPolicySet(configuration.policies.entries + options.policies.entries)
        var redirects = 0
        while true {
            // Only what differs from the request's options is written: a write copies their box.
            var hop = options
            // The first hop has the whole timeout (the deadline was set a moment ago), a later one what is left.
            if redirects > 0 { hop.timeout = deadline - ContinuousClock.now }
            // A request's own policy and trust store are for the host it names; any other host gets what a
            // first request to it would, as TrustKit scopes pins to domains.
            let sameHost =
                redirects == 0 || request.url.host.map(HostPattern.canonicalHost) == originURL.host.map(HostPattern.canonicalHost)
            if !sameHost || options.securityPolicy == nil {
                // With no match on the same host, the options' own (no policy, their trust store) stand.
                if let resolved = try Self.hostPolicy(for: request, in: policies) {
                    hop.securityPolicy = resolved.policy
                    hop.trustStore = resolved.trustStore ?? (sameHost ? options.trustStore : nil)
                } else if !sameHost {
                    hop.securityPolicy = nil
                    hop.trustStore = nil
                }
            }
            guard hop.timeout > .zero else {
                throw HTTPError(.timedOut, "\(request.method) \(request.displayURL): timed out after \(options.timeout)")
            }
            let connectHost = Self.connectHost(for: request, serverNameRoute: serverNameRoute, resolved: options.resolvedAddresses)
            var (response, transfer) = try await sendOnce(
                request, options: hop, policies: policies, connectHost: connectHost, streaming: streaming)
            // Written only after a redirect: a write may copy the response's box, which the engine thread may not have let go of yet.
            if redirects > 0 { response.redirectCount = redirects }
            let next: SessionRequest?
            do throws(HTTPError) {
                next = options.followRedirects ? try Redirect.next(after: request, response: response, options: options) : nil
            } catch {
                endStream(transfer)
                throw error
            }
            guard let next else { return (response, transfer) }
            // A redirect hop's body is not read: its transfer ends here, closing its connection.
            endStream(transfer)
            if options.redirectsStayOnHostAndPort, !Self.sameHostAndPort(next.url, originURL) {
                throw HTTPError(
                    .insecureRedirect,
                    """
                    \(request.method) \(request.displayURL): redirected to \(next.displayURL), another host or port, which was not \
                    checked; not followed
                    """, response: response)
            }
            redirects += 1
            guard redirects <= options.maximumRedirects else {
                throw HTTPError(
                    .tooManyRedirects, "\(request.method) \(request.displayURL): more than \(options.maximumRedirects) redirects",
                    response: response)
            }
            request = next
        }
    }

    /// Ends a streamed hop's transfer (its body unread, its connection closed); nothing for a collected one.
    private func endStream(_ transfer: Transfer?) {
        if let transfer, transfer.bodyChannel != nil { engine.cancel(transfer) }
    }

    /// Whether `a` and `b` name the same host (canonical) and port (the scheme's default when none is written).
    private static func sameHostAndPort(_ a: URL, _ b: URL) -> Bool {
        func port(_ url: URL) -> Int? { url.port ?? ServiceKind(scheme: url.scheme)?.defaultPort }
        return a.host(percentEncoded: false).map(HostPattern.canonicalHost) == b.host(percentEncoded: false).map(HostPattern.canonicalHost)
            && port(a) == port(b)
    }

    /// The per-host policies that apply to `request`'s host combined, with their trust store; `nil` when
    /// none matches (the session's defaults apply).
    private static func hostPolicy(for request: SessionRequest, in policies: HostPolicySet) throws(HTTPError) -> HostPolicySet.Resolution? {
        // Reading the URL's host costs more than the rest of the choice when there is no policy to match.
        guard !policies.entries.isEmpty, let host = request.url.host(percentEncoded: false) else { return nil }
        do {
            return try policies.resolution(for: host)
        } catch {
            throw HTTPError(.policyRejected, "\(request.method) \(request.displayURL): \(error.message)")
        }
    }

    /// A server name's host and port, and the host the connection goes to instead (the URL's).
    private struct ServerNameRoute {
        let name: String
        let port: Int
        let connectHost: String
    }

    /// Where a hop connects instead of its URL's host, or `nil` to resolve that host: the host a server name
    /// stands for when the hop names it and its port, then the address pinned for the host connected to and the
    /// port (curl's --connect-to, then --resolve). A hop elsewhere (a redirect to another host) gets neither.
    private static func connectHost(
        for request: SessionRequest, serverNameRoute: ServerNameRoute?, resolved: [ResolvedAddress]
    ) -> String? {
        guard serverNameRoute != nil || !resolved.isEmpty, let kind = request.kind, let host = request.url.host(percentEncoded: false),
            let port = request.url.port ?? kind.defaultPort
        else { return nil }
        var connectHost: String?
        if let route = serverNameRoute, route.port == port, HostPattern.canonicalHost(host) == route.name {
            connectHost = route.connectHost
        }
        if let entry = resolved.first(where: { $0.applies(toHost: connectHost ?? host, port: port) }) {
            return "\(entry.address)"
        }
        return connectHost
    }

    /// `url` with its host replaced (a server name).
    private static func url(_ url: URL, withHost host: String, label: String) throws(HTTPError) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw HTTPError(.invalidURL, "\(label): cannot read the URL")
        }
        components.host = host
        guard let renamed = components.url else { throw HTTPError(.invalidURL, "\(label): \"\(host)\" is not a host name") }
        return renamed
    }

    /// One hop: the reachability gate (for the proxy's host when the hop goes through one), then one libcurl
    /// transfer, or for `tls://` and `tcp://` without a proxy one check on the handshake engine (no transfer).
    /// - Parameter connectHost: the host to connect to when the URL names a server name instead.
    /// - Parameter streaming: the transfer hands its head over as soon as it arrives and streams its body.
    nonisolated(nonsending) private func sendOnce(
        _ request: SessionRequest, options: RequestOptions, policies: HostPolicySet, connectHost: String? = nil, streaming: Bool
    ) async throws(HTTPError)
        -> (response: SessionResponse, transfer: Transfer?)
    {
        // Built only for a message: redacting the URL costs more than the rest of a request's setup.
        var label: String { "\(request.method) \(request.displayURL)" }
        guard let kind = request.kind, let host = request.url.decodedHost, !host.isEmpty else {
            throw HTTPError(.invalidURL, "\(label): not an absolute URL of a kind pinpath sends (\(Self.supportedSchemes))")
        }
        // Before the gate, the resolver or a socket: not one byte goes to a server of a refused kind.
        if let refusal = kind.refusal { throw HTTPError(.invalidURL, "\(label): \(refusal) (nothing was sent)") }
        if streaming, !kind.isHTTP {
            throw HTTPError(.invalidURL, "\(label): only an http or https response has a body to stream (nothing was sent)")
        }
        guard let port = request.url.port ?? kind.defaultPort else {
            throw HTTPError(.invalidURL, "\(label): a \(kind.rawValue):// URL needs a port (\(kind.rawValue)://host:port)")
        }
        // Foundation's URL takes any number as a port: one past 65535 must not reach a socket as another port.
        guard (1...65535).contains(port) else {
            throw HTTPError(.invalidURL, "\(label): port \(port) is out of range (1-65535) (nothing was sent)")
        }
        let bareHost = URLHost.withoutBrackets(host)
        let dialledHost = connectHost.map(URLHost.withoutBrackets) ?? bareHost
        let proxy = options.proxies.proxy(for: request.url)
        // A proxy connects to the name it is given, not to the address (or host) this hop must reach: refused
        // rather than sent somewhere the caller did not ask for.
        if let connectHost, let proxy {
            throw HTTPError(
                .invalidURL,
                """
                \(label): cannot connect to \(connectHost) (a resolved address or server name) through the proxy \(proxy), \
                which would connect to \(host) itself; connect directly (no proxy) to pin the address (nothing was sent)
                """)
        }
        if let gate, options.reachability != .ignore {
            try await gate.admit(host: proxy?.host ?? dialledHost, proxy: proxy, options: options, request: label)
        }
        // curl's --connect-to syntax: an IPv6 host and address in brackets, or their colons read as separators.
        let connectTo = connectHost.map {
            "\(URLHost.bracketed(bareHost)):\(port):\(URLHost.bracketed(URLHost.withoutBrackets($0))):\(port)"
        }
        let deadline = ContinuousClock.now + options.timeout
        var attemptOptions = options
        var askedResponder = false
        var transfer: Transfer?
        var result: Result<SessionResponse, HTTPError>
        while true {
            let verifier = kind.usesTLS ? try verifier(host: bareHost, port: port, options: options) : nil
            let proxyVerifier = try proxy.flatMap { proxy throws(HTTPError) in
                proxy.scheme == .https ? try self.proxyVerifier(proxy, policies: policies, options: options, label: label) : nil
            }
            if Self.runsOnHandshakeEngine(kind, proxy: proxy) {
                result = await checkConnection(
                    request, kind: kind, host: bareHost, dialledHost: dialledHost, port: port, options: attemptOptions,
                    verifier: verifier, label: label)
            } else {
                let made = try Transfer(
                    request: request, kind: kind, options: attemptOptions, verifier: verifier,
                    clientCertificate: options.clientCertificate ?? configuration.clientCertificate, connectTo: connectTo,
                    addressCheck: options.reachability == .ignore ? nil : gate?.addressCheck,
                    proxy: proxy.map { (proxy: $0, verifier: proxyVerifier) }, handles: engine.handles, headerLists: engine.headerLists,
                    bodyChannel: streaming ? BodyChannel(limit: attemptOptions.streamBufferSize) : nil)
                transfer = made
                result = await run(made)
            }
            // Under `revocation: ocsp` a handshake without a staple or a cached answer stops before any request
            // byte: ask the leaf's responder, then connect again, where the answer decides inside the handshake.
            guard case .failure = result, !askedResponder,
                let query = verifier?.pendingOCSPQuery ?? proxyVerifier?.pendingOCSPQuery
            else { break }
            askedResponder = true
            await askResponder(query, options: options)
            attemptOptions.timeout = deadline - ContinuousClock.now
            guard attemptOptions.timeout > .zero else {
                throw HTTPError(.timedOut, "\(label): timed out after \(options.timeout) (while asking the OCSP responder)")
            }
        }
        if case .failure(let error) = result, error.code == .tlsExpired {
            result = .failure(
                await provingPossession(error, kind: kind, proxy: proxy, serverName: bareHost, options: options, deadline: deadline))
        }
        var response = try result.get()
        if let transfer, let socket = transfer.exchangeSocket {
            transfer.exchangeSocket = nil  // the exchange closes it; the transfer must not close the number again
            response.banner = try await engine.exchange(
                socket: socket, options.tcpExchange ?? TCPExchange(),
                deadline: ContinuousClock.now + options.timeout - .seconds(response.timings.total),
                label: label)
        }
        return (response, transfer)
    }

    /// `error`, a handshake refused for an expired certificate of the service's own chain, when the server proves
    /// it holds that certificate's key; otherwise `tls_invalid`, the expiry said after why it is unproven.
    ///
    /// The verifier refuses at the Certificate message, before the server proves possession of the key, and
    /// certificates are public: an attacker replaying the service's old expired certificate without its key must
    /// not read as a routine expiry. A second connection to the very address dialled, with the same SNI, completes
    /// a handshake (OpenSSL checks the server's signature) and sends nothing; its leaf must be the same certificate.
    /// An https proxy's own refused handshake is proven the same way, to the proxy. To an origin through a proxy, or
    /// after a STARTTLS command, that connection cannot be made the same way: unproven.
    private func provingPossession(
        _ error: HTTPError, kind: ServiceKind, proxy: Proxy?, serverName: String, options: RequestOptions,
        deadline: ContinuousClock.Instant
    ) async -> HTTPError {
        guard let evaluation = error.evaluation, let leaf = evaluation.servedChain.first else { return error }
        // A second handshake to the address the refused connection dialled (curl's `remote_address`).
        func secondHandshake(
            serverName: String, clientCertificate: (certificate: String, key: String?)?, unknownAddress: String
        ) async -> KeyPossessionCheck.Outcome {
            guard let remote = error.remoteAddress, let address = try? TLSEndpoint(parsing: remote) else {
                return .unproven(unknownAddress)
            }
            return await KeyPossessionCheck.run(
                address: address, serverName: serverName, leaf: leaf, clientCertificate: clientCertificate, deadline: deadline)
        }
        let outcome: KeyPossessionCheck.Outcome
        if let refusing = error.refusingProxy {
            // The proxy's own certificate: a direct TLS connection to it, as pinpath made one, without a client
            // certificate (the origin's is not the proxy's to see).
            outcome = await secondHandshake(
                serverName: refusing.host, clientCertificate: nil, unknownAddress: "the proxy's address is unknown")
        } else if let proxy {
            outcome = .unproven("the connection went through the proxy \(proxy), so a second handshake cannot reach the same server")
        } else if let command = kind.upgradeCommand {
            outcome = .unproven("TLS started after \(command), and pinpath does not repeat the plaintext exchange to prove it")
        } else {
            // An encrypted key is left out: the check would need its password, and a server that then refuses the
            // handshake leaves the expiry unproven, which only raises what is reported.
            let identity = (options.clientCertificate ?? configuration.clientCertificate).flatMap {
                $0.password == nil ? (certificate: $0.certificatePath, key: $0.keyPath) : nil
            }
            outcome = await secondHandshake(
                serverName: serverName, clientCertificate: identity, unknownAddress: "the address connected to is unknown")
        }
        guard case .unproven(let why) = outcome else { return error }
        let unproven = evaluation.possessionUnproven(why)
        var message = error.message
        if let said = evaluation.failure?.message, let now = unproven.failure?.message, let range = message.firstRange(of: said) {
            message.replaceSubrange(range, with: now)
        }
        var refused = HTTPError(.tlsInvalid, message, response: error.response, evaluation: unproven, curlCode: error.curlCode)
        refused.refusingProxy = error.refusingProxy
        refused.remoteAddress = error.remoteAddress
        refused.tlsVersion = error.tlsVersion
        refused.timings = error.timings
        return refused
    }

    /// Runs one transfer on the session's libcurl thread until it completes, or a streamed one until its
    /// head; cancelling the task meanwhile cancels it.
    nonisolated(nonsending) private func run(_ transfer: Transfer) async -> Result<SessionResponse, HTTPError> {
        let engine = self.engine
        let result = await withTaskCancellationHandler {
            // Unsafe rather than checked: the engine resumes it exactly once (``Transfer/complete(_:)`` clears what it
            // calls), and a checked one allocates an object per request to prove it.
            await withUnsafeContinuation { continuation in
                if transfer.bodyChannel != nil {
                    transfer.headCompletion = { result in
                        SanitizerEdge.release(transfer)  // what the libcurl thread set on the transfer, for the task
                        continuation.resume(returning: result)
                    }
                } else {
                    transfer.continuation = continuation
                }
                engine.submit(transfer)
            }
        } onCancel: {
            engine.cancel(transfer)
        }
        SanitizerEdge.acquire(transfer)
        return result
    }

    /// The schemes ``send(_:options:)`` accepts, for messages.
    static let supportedSchemes = ServiceKind.probed.map(\.rawValue).joined(separator: ", ")

    private func verifier(host: String, port: Int, options: RequestOptions) throws(HTTPError) -> HandshakeVerifier {
        // `send` has chosen the host's policy (``HostPolicySet/resolution(for:)``, the session's policies included): none
        // matched when it is `nil`.
        let policy = options.securityPolicy ?? chainValidation
        let store: TrustStore
        if let chosen = options.trustStore ?? configuration.trustStore { store = chosen } else { store = try systemStore() }
        return HandshakeVerifier(
            policy: policy, host: host, port: port, trustStore: store, ocspResponses: options.isOCSPQuery ? nil : ocspResponses)
    }

    /// The verifier of an https proxy's own certificate: the per-host policies matching the proxy's host,
    /// with their trust store, else chain and host-name validation with the session's store. The request's
    /// own ``RequestOptions/securityPolicy`` is for the origin and never applies to the proxy.
    private func proxyVerifier(
        _ proxy: Proxy, policies: HostPolicySet, options: RequestOptions, label: String
    ) throws(HTTPError) -> HandshakeVerifier {
        let resolved: HostPolicySet.Resolution?
        do {
            resolved = try policies.resolution(for: proxy.host)
        } catch {
            throw HTTPError(.policyRejected, "\(label): the proxy \(proxy): \(error.message)")
        }
        let store: TrustStore
        if let chosen = resolved?.trustStore ?? configuration.trustStore { store = chosen } else { store = try systemStore() }
        return HandshakeVerifier(
            policy: resolved?.policy ?? chainValidation, host: proxy.host, port: proxy.port, trustStore: store,
            ocspResponses: options.isOCSPQuery ? nil : ocspResponses)
    }

    /// The system store, loaded once: parsing the CA bundle costs milliseconds, too much for every request.
    private func systemStore() throws(HTTPError) -> TrustStore {
        let loaded = systemTrustStore.withLock { cached -> Result<TrustStore, any Error> in
            if let cached { return .success(cached) }
            let result = Result { try TrustStore.system() }
            cached = try? result.get()
            return result
        }
        return try loaded.mapError { HTTPError(.tlsFailed, "cannot load the system's trust store: \($0)") }.get()
    }

    private func withDefaultHeaders(_ request: SessionRequest) -> SessionRequest {
        var request = request
        // Most requests carry no fields of their own: they share the defaults' storage instead of copying it.
        if request.headers.isEmpty {
            request.headers = configuration.defaultHeaders
            return request
        }
        for (name, value) in configuration.defaultHeaders where request.headers[name] == nil {
            request.headers.add(name: name, value: value)
        }
        return request
    }

    // MARK: Defaults

    /// `User-Agent: pinpath/<version> (Linux <kernel release>)` and `Accept-Language` from the locale.
    public static let standardHeaders: HeaderFields = {
        var headers = HeaderFields()
        headers.add(name: "User-Agent", value: "pinpath/\(PinpathVersion.current) (Linux \(kernelRelease))")
        headers.add(name: "Accept-Language", value: acceptLanguage(environment: { getenv($0).map { String(cString: $0) } }))
        return headers
    }()

    private static var kernelRelease: String {
        var names = utsname()
        uname(&names)
        return withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// AFNetworking's `Accept-Language`: the preferred languages with falling q-values (`de-DE, en;q=0.9`),
    /// from `LANGUAGE`, then `LC_ALL`, `LC_MESSAGES`, `LANG`; `en` for the C and POSIX locales.
    static func acceptLanguage(environment: (String) -> String?) -> String {
        var tags: [String] = []
        let candidates =
            (environment("LANGUAGE")?.split(separator: ":").map(String.init) ?? [])
            + [environment("LC_ALL"), environment("LC_MESSAGES"), environment("LANG")].compactMap { $0 }
        for locale in candidates where !locale.isEmpty {
            let name = locale.prefix { $0 != "." && $0 != "@" }
            guard name != "C", name != "POSIX" else { continue }
            let tag = String(name.map { $0 == "_" ? "-" : $0 })
            if !tags.contains(tag) { tags.append(tag) }
        }
        if tags.isEmpty { tags = ["en"] }
        return tags.prefix(6).enumerated().map { index, tag in
            index == 0 ? tag : "\(tag);q=0.\(10 - index)"
        }.joined(separator: ", ")
    }
}
