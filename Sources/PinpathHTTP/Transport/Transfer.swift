import CCurl
import CCurlShims  // it includes <curl/curl.h> too, and clang may credit libcurl's constants to it
import FoundationEssentials
import Glibc
import PinpathReachability
import PinpathSecurity
import Synchronization

/// What a pooled connection was made and verified under (``Transfer/connectionTerms``).
struct ConnectionTerms: Hashable {
    let origin: HandshakeVerifier.Terms?
    let proxy: Proxy?
    let proxyTerms: HandshakeVerifier.Terms?
}

/// One request on one libcurl easy handle: its options (`Transfer+Options.swift`), its callbacks and what
/// they collect (`Transfer+Callbacks.swift`), and its outcome.
///
/// `@unchecked Sendable`: it is built on the caller's task and from then on touched only by the engine
/// thread (libcurl calls every callback there), except ``cancelled``, which is atomic.
///
/// Its variables are `@exclusivity(unchecked)`: the callbacks write them for every header line and body chunk,
/// and Swift's run-time check of each access cost about as much as the writes (1,100 instructions per request);
/// no two accesses to one of them overlap (none is passed `inout` across a call that reaches another).
final class Transfer: @unchecked Sendable {
    /// Checks a resolved address before libcurl connects to it; `nil` or `reachable` lets it through.
    typealias AddressCheck = @Sendable (IPAddress) -> TargetReachability?

    let request: SessionRequest
    /// What the URL's scheme asks for: an HTTP exchange or a connection check.
    let kind: ServiceKind
    let options: RequestOptions
    let handle: UnsafeMutableRawPointer
    /// Where the handle came from and goes back to.
    private let handles: EasyHandlePool
    /// Runs the security policy in the handshake of a connection this transfer opens; `nil` for plain http.
    let verifier: HandshakeVerifier?
    let addressCheck: AddressCheck?
    /// The proxy the request goes through, if any.
    let proxy: Proxy?
    /// Runs the policy for the proxy's host in the handshake with an https proxy; `nil` otherwise.
    let proxyVerifier: HandshakeVerifier?
    let bodySource: RequestBody?
    /// libcurl's message for a failure, written by libcurl (`CURLOPT_ERRORBUFFER`); the handle's, from the pool.
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// The request's header fields as libcurl reads them, checked (``HeaderList``); kept for as long as the handle may read them.
    @exclusivity(unchecked) var headerList: HeaderList?
    /// Where ``headerList`` comes from.
    let headerLists: HeaderListCache
    /// `CURLOPT_CONNECT_TO`'s one entry (a server name dialled at another host); freed with the handle.
    @exclusivity(unchecked) var connectToList: UnsafeMutablePointer<curl_slist>?

    // Written by the callbacks on the engine thread, read by ``outcome(_:)``.
    /// The verifier that checked the connection the request goes out on: ``verifier`` for a new connection,
    /// the opener's for a reused one. Set when the connection is ready, before the request is sent.
    @exclusivity(unchecked) var connectionVerifier: HandshakeVerifier?
    /// The pass over ``bodySource`` being sent.
    @exclusivity(unchecked) var bodyReader: (any BodyReader)?
    @exclusivity(unchecked) var responseHeaders = HeaderFields()
    @exclusivity(unchecked) var body: [UInt8] = []
    /// Why a callback stopped the transfer; it wins over libcurl's code, which only says that it was stopped.
    @exclusivity(unchecked) var callbackFailure: HTTPError?
    @exclusivity(unchecked) var skippedAddresses: [TargetReachability] = []
    @exclusivity(unchecked) var socketsOpened = 0
    @exclusivity(unchecked) var tlsSession: (version: String, cipher: String)?
    /// TLS contexts libcurl made for this transfer's connections: with an https proxy and an https origin it
    /// makes the proxy's first, then the origin's inside the tunnel (``installVerifier(on:)``).
    @exclusivity(unchecked) var tlsContextsMade = 0
    /// The blank line ending the last response's header section has arrived.
    @exclusivity(unchecked) var headersComplete = false
    /// For the non-HTTP kinds: the server's response lines in the connect phase (the greeting first).
    @exclusivity(unchecked) var serverLines: [UInt8] = []
    /// For a `tcp://` exchange: a duplicate of the connected socket, taken before libcurl closes its own; the
    /// session runs the exchange on it and closes it.
    @exclusivity(unchecked) var exchangeSocket: Int32?

    // The engine's, while libcurl has the handle: the transfer's place in its running list and the pool it is attached to.
    @exclusivity(unchecked) var runningIndex: Int?
    @exclusivity(unchecked) var pool: ConnectionPool?

    /// Set from any thread to stop the transfer; the engine removes it at its next wake-up.
    let cancelled = Atomic<Bool>(false)
    /// Resumed exactly once, by the engine, with the outcome (``complete(_:)``).
    @exclusivity(unchecked) var completion: (@Sendable (Result<SessionResponse, HTTPError>) -> Void)?
    /// Or, for a collected body, the task waiting for the outcome (``Session``'s): resumed by ``complete(_:)`` as
    /// ``completion`` would be, without a closure allocated per request to hold it.
    @exclusivity(unchecked) var continuation: UnsafeContinuation<Result<SessionResponse, HTTPError>, Never>?

    // A streamed transfer's (`Transfer+Streaming.swift`), on the engine thread but for the channel.
    /// Where a streamed body goes instead of ``body``; `nil` for a collected body.
    let bodyChannel: BodyChannel?
    /// For a streamed transfer: resumed once with the final response's head, from the header callback, or with
    /// the failure that came first.
    @exclusivity(unchecked) var headCompletion: (@Sendable (Result<SessionResponse, HTTPError>) -> Void)?
    /// A streamed transfer's deadline for its head (``RequestOptions/timeout``); the engine enforces it.
    @exclusivity(unchecked) var headDeadline: ContinuousClock.Instant?
    /// When the final response's head arrived (a streamed transfer).
    @exclusivity(unchecked) var headArrival: ContinuousClock.Instant?
    /// Body bytes the channel accepted, and the count the engine last saw, at ``lastActivity``.
    @exclusivity(unchecked) var bodyBytesAccepted: Int64 = 0
    @exclusivity(unchecked) var bodyBytesSeen: Int64 = 0
    @exclusivity(unchecked) var lastActivity: ContinuousClock.Instant?
    /// The write callback paused the transfer because the consumer is behind: not a stall.
    @exclusivity(unchecked) var pausedForConsumer = false
    /// The transfer's place in the engine's list of streamed transfers.
    @exclusivity(unchecked) var deadlineIndex: Int?
    /// libcurl said it dropped bytes past the announced `Content-Length` ("Excess found"; its debug texts).
    @exclusivity(unchecked) var excessFound = false
    /// The final response's `Content-Length` when it counts the bytes written (no content coding), for a
    /// streamed transfer's check for bytes past it.
    @exclusivity(unchecked) var announcedLength: Int64?
    /// The sockets a plain streamed transfer opened (on a fresh connection), one of them its connection's: libcurl
    /// 7.88 tells a transfer's socket only once it is done.
    @exclusivity(unchecked) var streamSockets: [Int32] = []
    /// When ``RequestOptions/progress`` was last called, and whether this hop's progress is not reported (a
    /// redirect to follow).
    @exclusivity(unchecked) var lastProgress: ContinuousClock.Instant?
    @exclusivity(unchecked) var progressSuppressed = false

    init(
        request: SessionRequest, kind: ServiceKind? = nil, options: RequestOptions, verifier: HandshakeVerifier?,
        clientCertificate: ClientCertificate?,
        connectTo: String? = nil, addressCheck: AddressCheck?, proxy: (proxy: Proxy, verifier: HandshakeVerifier?)? = nil,
        handles: EasyHandlePool, headerLists: HeaderListCache, bodyChannel: BodyChannel? = nil
    ) throws(HTTPError) {
        guard let taken = handles.take() else {
            throw HTTPError(.engineUnavailable, "libcurl cannot create a transfer (out of memory?)")
        }
        handle = taken.handle
        errorBuffer = taken.errorBuffer
        self.handles = handles
        self.headerLists = headerLists
        self.request = request
        // The session has checked the scheme (and passes the kind it read); a URL without one of the kinds is
        // sent as libcurl reads it.
        self.kind = kind ?? request.kind ?? .https
        self.options = options
        self.verifier = verifier
        self.addressCheck = addressCheck
        self.proxy = proxy?.proxy
        self.proxyVerifier = proxy?.verifier
        self.bodySource = request.body
        self.bodyChannel = bodyChannel
        if bodyChannel != nil { headDeadline = .now + options.timeout }
        errorBuffer.pointee = 0
        try configure(clientCertificate: clientCertificate, connectTo: connectTo)
    }

    /// The engine has removed the handle from the multi handle and its pool by now (or never added it).
    deinit {
        handles.recycle(handle, errorBuffer: errorBuffer)
        curl_slist_free_all(connectToList)
        if let exchangeSocket { close(exchangeSocket) }
    }

    /// The pointer libcurl hands back to the callbacks. Unretained: the engine holds the transfer for as long
    /// as libcurl has its handle, so the data callbacks, called for every header line, borrow it without
    /// retaining it (`_withUnsafeGuaranteedRef`).
    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// What a connection carrying this request must have been made and verified under, which keys the engine's
    /// connection pools: the origin's trust terms, and the proxy with its own; `nil` for plain http sent
    /// directly or through a plain http proxy (libcurl itself tells proxies apart).
    var connectionTerms: ConnectionTerms? {
        guard verifier != nil || proxyVerifier != nil else { return nil }
        return ConnectionTerms(origin: verifier?.terms, proxy: proxy, proxyTerms: proxyVerifier?.terms)
    }

    /// The transfer whose handle this is (`CURLOPT_PRIVATE`), if the engine is running it.
    static func running(_ handle: UnsafeMutableRawPointer) -> Transfer? {
        var pointer: UnsafeMutablePointer<CChar>?
        guard pinpath_curl_getinfo_string(handle, CURLINFO_PRIVATE, &pointer) == CURLE_OK, let pointer else { return nil }
        let transfer = Unmanaged<Transfer>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
        return transfer.runningIndex == nil ? nil : transfer
    }

    /// `GET https://example.com/path`, for messages (``SessionRequest/displayURL``: no query, no credentials).
    var description: String { "\(request.method) \(request.displayURL)" }

    /// The response, or the error, once libcurl has finished with `code`.
    func outcome(_ code: CURLcode) -> Result<SessionResponse, HTTPError> {
        if let callbackFailure { return .failure(callbackFailure) }
        let info = TransferInfo(handle: handle)
        guard code == CURLE_OK else { return .failure(error(for: code, info: info)) }
        // A transfer that ends well without the pre-request check having admitted its connection is not trusted.
        if let unadmittedConnection { return .failure(unadmittedConnection) }
        if !kind.isHTTP { return .success(connectionCheckResponse(info)) }
        if excessFound { return .failure(excessFailure()) }
        return .success(response(info))
    }

    /// The response libcurl has read so far: the whole of it once the transfer is done, the head of a streamed one.
    func response(_ info: TransferInfo) -> SessionResponse {
        var response = SessionResponse(
            url: request.url, statusCode: info.responseCode, headers: responseHeaders, body: body,
            httpVersion: info.httpVersion, remoteAddress: info.remoteAddress, timings: info.timings)
        if let tlsSession {
            response.tls = TLSDetails(
                version: tlsSession.version, cipher: tlsSession.cipher, evaluation: try? connectionVerifier?.lastResult?.get())
        }
        return response
    }

    /// Refuses a connection that pinpath's pre-request check did not admit while a verifier was required: the
    /// pre-request callback is what proves the verifier accepted this connection.
    var unadmittedConnection: HTTPError? {
        guard verifier != nil, connectionVerifier == nil else { return nil }
        return HTTPError(
            .tlsFailed,
            """
            \(description): libcurl finished without pinpath's pre-request check confirming that its verifier accepted \
            this connection's TLS handshake; refused
            """)
    }

    /// A connection check's result: no status, the server's lines as its banner, and for `tcp://` with an
    /// exchange the socket to run it on (duplicated now: libcurl closes its own when the handle leaves).
    private func connectionCheckResponse(_ info: TransferInfo) -> SessionResponse {
        var response = SessionResponse(
            url: request.url, statusCode: 0, headers: HeaderFields(), body: [], httpVersion: "", remoteAddress: info.remoteAddress,
            timings: info.timings)
        if let tlsSession {
            response.tls = TLSDetails(
                version: tlsSession.version, cipher: tlsSession.cipher, evaluation: try? connectionVerifier?.lastResult?.get())
        }
        if !serverLines.isEmpty { response.banner = String(decoding: serverLines, as: UTF8.self) }
        if kind == .tcp, options.tcpExchange != nil, let socket = info.activeSocket {
            let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
            if duplicate >= 0 { exchangeSocket = duplicate }
        }
        return response
    }

    private func error(for code: CURLcode, info: TransferInfo) -> HTTPError {
        // The proxy's handshake comes first: when its policy refused it, no origin handshake ran.
        let proxyRefused = proxyVerifier?.lastResult.map { result in (try? result.get())?.allowsConnection != true } ?? false
        let request = proxy.map { proxyRefused ? "\(description): the proxy \($0)" : "\(description) through the proxy \($0)" }
        let failure = CurlErrorMapping.Failure(
            code: code, request: request ?? description,
            libcurlMessage: errorBuffer.pointee != 0 ? String(cString: errorBuffer) : nil, socketError: info.socketError,
            handshake: proxyRefused ? proxyVerifier?.lastResult : verifier?.lastResult,
            skippedAddresses: socketsOpened == 0 ? skippedAddresses : [],
            usedTLS: verifier != nil || proxyVerifier != nil, connected: info.remoteAddress != nil, headersComplete: headersComplete,
            maximumBodySize: options.maximumBodySize, kind: kind, upgradeStarted: tlsContextsMade > 0)
        var error = CurlErrorMapping.error(for: failure)
        if proxyRefused { error.refusingProxy = proxy }
        // Where it got: "which address served the wrong key?" is the first question after a refused handshake.
        let handshakeReached = !proxyRefused && verifier?.lastResult != nil
        error.remoteAddress = info.remoteAddress
        error.tlsVersion = handshakeReached ? verifier?.lastProtocolVersion : nil
        error.timings = info.timingsReached(connected: info.remoteAddress != nil, handshakeReached: handshakeReached)
        return error
    }
}
