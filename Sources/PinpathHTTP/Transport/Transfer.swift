import CCurl
import COpenSSL
import CCurlShims
import FoundationEssentials
import Glibc
import PinpathReachability
import PinpathSecurity
import Synchronization

/// One request on one libcurl easy handle: its options, its callbacks and what they collect.
///
/// `@unchecked Sendable`: it is built on the caller's task and from then on touched only by the engine
/// thread (libcurl calls every callback there), except ``cancelled``, which is atomic.
final class Transfer: @unchecked Sendable {
    /// Checks a resolved address before libcurl connects to it; `nil` or `reachable` lets it through.
    typealias AddressCheck = @Sendable (IPAddress) -> TargetReachability?

    let request: HTTPRequest
    let options: RequestOptions
    let handle: UnsafeMutableRawPointer
    /// Runs the security policy in the handshake of a connection this transfer opens; `nil` for plain http.
    let verifier: HandshakeVerifier?
    /// The verifier that checked the connection the request goes out on: ``verifier`` for a new connection,
    /// the opener's for a reused one. Set once the connection is ready, before the request is sent.
    private var connectionVerifier: HandshakeVerifier?
    private let addressCheck: AddressCheck?
    private let bodySource: RequestBody?
    private var bodyReader: (any BodyReader)?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))

    // Collected by the callbacks.
    private var responseHeaders = HTTPHeaders()
    private var body: [UInt8] = []
    private var callbackFailure: HTTPError?
    private var skippedAddresses: [TargetReachability] = []
    private var socketsOpened = 0
    private var tlsSession: (version: String, cipher: String)?
    /// The blank line ending the last response's header section has arrived.
    private var headersComplete = false

    /// Set from any thread to stop the transfer; the engine removes it at its next wake-up.
    let cancelled = Atomic<Bool>(false)
    /// Resumed exactly once, by the engine, with the outcome.
    var completion: (@Sendable (Result<HTTPResponse, HTTPError>) -> Void)?

    init(
        request: HTTPRequest, options: RequestOptions, verifier: HandshakeVerifier?, clientCertificate: ClientCertificate?,
        addressCheck: AddressCheck?
    ) throws(HTTPError) {
        guard let handle = curl_easy_init() else {
            throw HTTPError(.engineUnavailable, "libcurl cannot create a transfer (out of memory?)")
        }
        self.handle = handle
        self.request = request
        self.options = options
        self.verifier = verifier
        self.addressCheck = addressCheck
        self.bodySource = request.body
        errorBuffer.initialize(to: 0)
        try configure(clientCertificate: clientCertificate)
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    private var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private func configure(clientCertificate: ClientCertificate?) throws(HTTPError) {
        try request.headers.validate()
        try set(CURLOPT_URL, request.url.absoluteString)
        try set(CURLOPT_NOSIGNAL, 1)  // several threads; timeouts are libcurl's own
        try set(CURLOPT_ERRORBUFFER, pointer: errorBuffer)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(options.connectTimeout))
        try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(options.timeout))
        try set(CURLOPT_FOLLOWLOCATION, 0)  // the session follows redirects itself, so each hop is gated
        try set(CURLOPT_ACCEPT_ENCODING, "")  // every encoding this libcurl decodes
        try set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        try set(CURLOPT_PROTOCOLS_STR, "http,https")
        // A body announced (Content-Length) larger than the limit is refused before any of it is read;
        // receiveBody still counts, for chunked bodies and servers that announce less than they send. Not for
        // HEAD: libcurl would apply it to the length of the body a HEAD response only describes.
        if request.method != .head { try set(CURLOPT_MAXFILESIZE_LARGE, options.maximumBodySize, offset: true) }
        switch options.addressFamily {
        case .any: break
        case .ipv4: try set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V4))
        case .ipv6: try set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V6))
        }
        if options.freshConnection {
            try set(CURLOPT_FRESH_CONNECT, 1)
            try set(CURLOPT_FORBID_REUSE, 1)
        }
        try check(pinpath_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveBody(data!, size * count)
        })
        try set(CURLOPT_WRITEDATA, pointer: context)
        try check(pinpath_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveHeader(data!, size * count)
        })
        try set(CURLOPT_HEADERDATA, pointer: context)
        try configureMethodAndBody()
        try configureHeaders()
        if request.url.scheme?.lowercased() == "https" {
            try configureTLS(clientCertificate: clientCertificate)
        }
        if addressCheck != nil {
            try check(pinpath_curl_set_open_socket_callback(handle) { context, purpose, address in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().openSocket(purpose, address!)
            })
            try set(CURLOPT_OPENSOCKETDATA, pointer: context)
        }
    }

    private func configureMethodAndBody() throws(HTTPError) {
        let method = request.method
        switch method {
        case .head: try set(CURLOPT_NOBODY, 1)
        case .post: break
        case .get where bodySource == nil: break
        // A body is sent as libcurl sends a POST's (read callback, exact size) under the method's own name.
        default: try set(CURLOPT_CUSTOMREQUEST, method.rawValue)
        }
        guard let bodySource else {
            if method == .post { try set(CURLOPT_POSTFIELDSIZE_LARGE, 0, offset: true); try set(CURLOPT_POST, 1) }
            return
        }
        bodyReader = try Self.reader(for: bodySource)
        try set(CURLOPT_POST, 1)
        try set(CURLOPT_POSTFIELDSIZE_LARGE, bodySource.count, offset: true)
        try check(pinpath_curl_set_data_callback(handle, CURLOPT_READFUNCTION) { data, size, count, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().sendBody(data!, size * count)
        })
        try set(CURLOPT_READDATA, pointer: context)
        try check(pinpath_curl_set_seek_callback(handle) { context, offset, origin in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().rewindBody(offset, origin)
        })
        try set(CURLOPT_SEEKDATA, pointer: context)
    }

    private func configureHeaders() throws(HTTPError) {
        var fields = request.headers.fields.map { field in
            // An empty value is written `Name;`: libcurl drops `Name:` as a request to remove its own header.
            field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)"
        }
        // libcurl waits up to a second for `100 Continue` before sending a large body; servers rarely send it.
        if bodySource != nil && request.headers["Expect"] == nil { fields.append("Expect:") }
        for field in fields {
            guard let list = curl_slist_append(headerList, field) else {
                throw HTTPError(.engineUnavailable, "libcurl cannot store a header (out of memory?)")
            }
            headerList = list
        }
        if let headerList { try set(CURLOPT_HTTPHEADER, pointer: headerList) }
    }

    /// Peer verification stays on (with it off, OpenSSL ignores the callback's verdict) and runs our policy
    /// with the session's shared trust store, so libcurl loads no CA file per connection. The session cache is
    /// off: a resumed TLS 1.3 session does not call the callback, and every connection must be checked.
    private func configureTLS(clientCertificate: ClientCertificate?) throws(HTTPError) {
        guard let verifier else { throw HTTPError(.engineUnavailable, "an https transfer without a verifier") }
        try set(CURLOPT_SSL_VERIFYPEER, 1)
        try set(CURLOPT_SSL_VERIFYHOST, verifier.policy.validatesDomainName ? 2 : 0)
        try set(CURLOPT_CAINFO, pointer: nil)
        try set(CURLOPT_CAPATH, pointer: nil)
        try set(CURLOPT_SSL_SESSIONID_CACHE, 0)
        try check(pinpath_curl_set_ssl_ctx_callback(handle) { _, sslContext, context in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().installVerifier(on: OpaquePointer(sslContext!))
        })
        try set(CURLOPT_SSL_CTX_DATA, pointer: context)
        try check(pinpath_curl_set_prereq_callback(handle) { context, _, _, _, _ in
            Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().admitConnection()
        })
        try set(CURLOPT_PREREQDATA, pointer: context)
        if let clientCertificate {
            try set(CURLOPT_SSLCERT, clientCertificate.certificatePath)
            if let key = clientCertificate.keyPath { try set(CURLOPT_SSLKEY, key) }
            if let password = clientCertificate.password { try set(CURLOPT_KEYPASSWD, password) }
        }
    }

    /// The trust terms the request's connection must have been verified under, which key the engine's
    /// connection pools; `nil` for plain http.
    var connectionTerms: HandshakeVerifier.Terms? { verifier?.terms }

    // MARK: Callbacks (engine thread)

    /// libcurl made a TLS context for a new connection (one per connection in 7.88): the verifier goes on it
    /// and lives as long as the connection.
    private func installVerifier(on sslContext: OpaquePointer) -> CURLcode {
        guard let verifier else { return CURLE_OK }
        do {
            try verifier.install(on: sslContext)
            return CURLE_OK
        } catch {
            callbackFailure = HTTPError(.tlsFailed, "\(description): \(error.message)")
            return CURLE_ABORTED_BY_CALLBACK
        }
    }

    /// The connection is ready (new or taken from the pool) and nothing is sent yet: it may carry the request
    /// only if its handshake was verified under this request's terms, for this host and port, and allowed.
    /// The pools keep other connections from being offered; this refuses one if that ever fails.
    private func admitConnection() -> Int32 {
        guard let verifier else { return CURL_PREREQFUNC_OK }
        guard let ssl = currentSSL(), let sslContext = SSL_get_SSL_CTX(ssl),
            let checked = HandshakeVerifier.installed(on: sslContext), checked.connectionServes(verifier)
        else {
            callbackFailure = HTTPError(
                .tlsFailed,
                "\(description): refused to send on a connection that was not verified under this request's security policy and trust store (nothing was sent)")
            return CURL_PREREQFUNC_ABORT
        }
        connectionVerifier = checked
        return CURL_PREREQFUNC_OK
    }

    private func receiveBody(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        guard body.count + count <= options.maximumBodySize else {
            callbackFailure = HTTPError(
                .protocolError, "\(description): the response body is larger than \(options.maximumBodySize) bytes")
            return 0  // libcurl stops with CURLE_WRITE_ERROR
        }
        data.withMemoryRebound(to: UInt8.self, capacity: count) { body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count)) }
        return count
    }

    private func receiveHeader(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        // Parsed from the bytes: this runs for every header line of every response.
        let line = UnsafeRawBufferPointer(start: data, count: count).bindMemory(to: UInt8.self)
        if line.starts(with: Self.statusLinePrefix) {
            // A new response (100 Continue, or the final one): only the last one's fields count.
            responseHeaders = HTTPHeaders()
            headersComplete = false
            if tlsSession == nil { tlsSession = currentTLSSession() }
        } else if line.count <= 2 && line.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            headersComplete = true  // the blank line after a response's header section
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
            var start = colon + 1, end = line.count
            while start < end && isSpace(line[start]) { start += 1 }
            while end > start && isSpace(line[end - 1]) { end -= 1 }
            responseHeaders.add(
                name: String(decoding: line[..<colon], as: UTF8.self), value: String(decoding: line[start..<end], as: UTF8.self))
        }
        return count
    }

    private static let statusLinePrefix = Array("HTTP/".utf8)

    private func sendBody(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        guard let bodyReader else { return 0 }
        do {
            return try bodyReader.read(into: UnsafeMutableRawBufferPointer(start: data, count: count))
        } catch {
            callbackFailure = error
            return Int(CURL_READFUNC_ABORT)
        }
    }

    private func rewindBody(_ offset: curl_off_t, _ origin: Int32) -> Int32 {
        guard offset == 0, origin == SEEK_SET, let bodySource else { return 2 }  // CURL_SEEKFUNC_CANTSEEK
        do {
            bodyReader = try Self.reader(for: bodySource)
            return 0  // CURL_SEEKFUNC_OK
        } catch {
            callbackFailure = error
            return 1  // CURL_SEEKFUNC_FAIL
        }
    }

    /// Creates the socket for an address unless the reachability monitor says it has no usable route.
    private func openSocket(_ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        if let addressCheck, purpose == CURLSOCKTYPE_IPCXN, let ip = Self.ipAddress(pinpath_curl_sockaddr(address)),
            let verdict = addressCheck(ip), verdict.status == .notReachable
        {
            skippedAddresses.append(verdict)
            return -1  // CURL_SOCKET_BAD: libcurl tries the next address
        }
        let fd = socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
        if fd >= 0 { socketsOpened += 1 }
        return fd
    }

    /// The OpenSSL `SSL*` of the transfer's connection, once it has one.
    private func currentSSL() -> OpaquePointer? {
        var info: UnsafeMutablePointer<curl_tlssessioninfo>?
        guard pinpath_curl_getinfo_tls_session(handle, &info) == CURLE_OK, let info,
            info.pointee.backend == CURLSSLBACKEND_OPENSSL, let internals = info.pointee.internals
        else { return nil }
        return OpaquePointer(internals)
    }

    private func currentTLSSession() -> (String, String)? {
        guard let ssl = currentSSL() else { return nil }
        let version = String(cString: SSL_get_version(ssl))
        let cipher = SSL_get_current_cipher(ssl).map { String(cString: SSL_CIPHER_get_name($0)) } ?? "?"
        return (version, cipher)
    }

    // MARK: Outcome

    /// The response, or the error, once libcurl has finished with `code`.
    func outcome(_ code: CURLcode) -> Result<HTTPResponse, HTTPError> {
        if let callbackFailure { return .failure(callbackFailure) }
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        var response = HTTPResponse(
            url: request.url, statusCode: infoLong(CURLINFO_RESPONSE_CODE), headers: responseHeaders, body: body,
            httpVersion: httpVersion, remoteAddress: remoteAddress, timings: timings)
        if let tlsSession {
            response.tls = TLSDetails(
                version: tlsSession.version, cipher: tlsSession.cipher, evaluation: try? connectionVerifier?.lastResult?.get())
        }
        return .success(response)
    }

    private func error(for code: CURLcode) -> HTTPError {
        // A refused OCSP staple fails the handshake in OpenSSL's status callback, which libcurl reports as a
        // connect error rather than a verification failure.
        if code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR, let result = verifier?.lastResult {
            switch result {
            case .success(let evaluation) where !evaluation.allowsConnection:
                let failure = evaluation.failure
                let pins = failure?.reason == .pinMismatch || failure?.reason == .pinsExpired
                return HTTPError(
                    pins ? .policyRejected : .tlsInvalid, "\(description): \(failure?.message ?? "rejected by the security policy")",
                    evaluation: evaluation, curlCode: Int(code.rawValue))
            case .failure(let error):
                return HTTPError(.tlsFailed, "\(description): \(error.message)", curlCode: Int(code.rawValue))
            default:
                break
            }
        }
        if code == CURLE_COULDNT_CONNECT, socketsOpened == 0, let first = skippedAddresses.first {
            let reason = first.reason?.rawValue ?? "not reachable"
            return HTTPError(
                .notReachable, "\(description): no resolved address is reachable (\(first.address.map { "\($0)" } ?? "?"): \(reason))",
                reachability: first)
        }
        var detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        // libcurl 7.88 says "Couldn't connect to server" whether the server refused (RST), a router answered
        // that the host is unreachable (ICMP), or the route was missing: the socket's own error tells them apart.
        let socketError = Int32(clamping: infoLong(CURLINFO_OS_ERRNO))
        if code == CURLE_COULDNT_CONNECT, socketError != 0 {
            let text = String(cString: strerror(socketError))
            if !detail.contains(text) { detail += " (\(text))" }
        }
        if code == CURLE_FILESIZE_EXCEEDED {
            return HTTPError(
                .protocolError, "\(description): the response body is larger than \(options.maximumBodySize) bytes (libcurl: \(detail))",
                curlCode: Int(code.rawValue))
        }
        // A TLS 1.3 server that refuses the client (a client certificate required, or missing) sends its
        // alert after the client's side of the handshake is done, so libcurl meets it in SSL_read and
        // reports CURLE_RECV_ERROR (else `protocol_error`). curl's message then carries OpenSSL's reason,
        // whose text for every received alert is "… alert …" ("tlsv13 alert certificate required"). A reset
        // is reported with the socket's error text instead ("Connection reset by peer") and stays a protocol
        // error.
        if verifier != nil, code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR, detail.contains("SSL routines"),
            detail.contains(" alert ")
        {
            return HTTPError(.tlsFailed, "\(description): the server ended TLS with an alert: \(detail)", curlCode: Int(code.rawValue))
        }
        // Once connected, libcurl 7.88 reports two broken responses with codes that name something else: a
        // status line it cannot parse, or none at all (HTTP/0.9), as CURLE_UNSUPPORTED_PROTOCOL (else
        // `invalid_url`), and a header line over CURL_MAX_HTTP_HEADER (100 KiB; its header buffer is full) as
        // CURLE_OUT_OF_MEMORY with no message (else `transfer_failed`, "Out of memory"). The URL was checked
        // before sending, so both are the server breaking HTTP.
        if remoteAddress != nil && !headersComplete {
            if code == CURLE_UNSUPPORTED_PROTOCOL {
                return HTTPError(.protocolError, "\(description): the server's status line is not HTTP: \(detail)", curlCode: Int(code.rawValue))
            }
            if code == CURLE_OUT_OF_MEMORY {
                return HTTPError(
                    .protocolError, "\(description): a response header line is longer than libcurl's limit of 100 KiB (libcurl: \(detail))",
                    curlCode: Int(code.rawValue))
            }
        }
        return HTTPError(HTTPError.Code(curlCode: code), "\(description): \(detail)", curlCode: Int(code.rawValue))
    }

    /// `GET https://example.com/path`, for messages (``HTTPRequest/displayURL``: no query, no credentials).
    var description: String { "\(request.method) \(request.displayURL)" }

    private var httpVersion: String {
        switch infoLong(CURLINFO_HTTP_VERSION) {
        case Int(CURL_HTTP_VERSION_1_0): return "HTTP/1.0"
        case Int(CURL_HTTP_VERSION_2_0): return "HTTP/2"
        case Int(CURL_HTTP_VERSION_3): return "HTTP/3"
        default: return "HTTP/1.1"
        }
    }

    private var remoteAddress: String? {
        var ip: UnsafeMutablePointer<CChar>?
        guard pinpath_curl_getinfo_string(handle, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK, let ip, ip.pointee != 0 else { return nil }
        let address = String(cString: ip)
        let port = infoLong(CURLINFO_PRIMARY_PORT)
        return address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    /// blackbox_exporter's phases from libcurl's cumulative times.
    private var timings: PhaseTimings {
        func seconds(_ info: CURLINFO) -> Double {
            var value: curl_off_t = 0
            _ = pinpath_curl_getinfo_off_t(handle, info, &value)
            return Double(value) / 1_000_000
        }
        let resolved = seconds(CURLINFO_NAMELOOKUP_TIME_T), connected = seconds(CURLINFO_CONNECT_TIME_T)
        let handshaken = seconds(CURLINFO_APPCONNECT_TIME_T), sent = seconds(CURLINFO_PRETRANSFER_TIME_T)
        let firstByte = seconds(CURLINFO_STARTTRANSFER_TIME_T), total = seconds(CURLINFO_TOTAL_TIME_T)
        var timings = PhaseTimings()
        timings.resolve = resolved
        timings.connect = max(0, connected - resolved)
        timings.tls = handshaken > 0 ? max(0, handshaken - connected) : 0
        timings.processing = max(0, firstByte - max(sent, connected, handshaken))
        timings.transfer = max(0, total - firstByte)
        timings.total = total
        return timings
    }

    private func infoLong(_ info: CURLINFO) -> Int {
        var value = 0
        _ = pinpath_curl_getinfo_long(handle, info, &value)
        return value
    }

    // MARK: Helpers

    private static func reader(for body: RequestBody) throws(HTTPError) -> any BodyReader {
        switch body {
        case .bytes(let bytes): return BytesReader(bytes)
        case .stream(let source): return try source.makeReader()
        }
    }

    private static func ipAddress(_ address: UnsafePointer<sockaddr>) -> IPAddress? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin_addr) { IPAddress(bytes: $0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                withUnsafeBytes(of: pointer.pointee.sin6_addr) { IPAddress(bytes: $0) }
            }
        default:
            return nil
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    private func set(_ option: CURLoption, _ value: Int, offset: Bool = false) throws(HTTPError) {
        try check(offset ? pinpath_curl_setopt_off_t(handle, option, curl_off_t(value)) : pinpath_curl_setopt_long(handle, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws(HTTPError) {
        // libcurl copies string options (since 7.17), so the temporary C string may go.
        try check(pinpath_curl_setopt_pointer(handle, option, value))
    }

    private func set(_ option: CURLoption, pointer: UnsafeRawPointer?) throws(HTTPError) {
        try check(pinpath_curl_setopt_pointer(handle, option, pointer))
    }

    private func check(_ code: CURLcode) throws(HTTPError) {
        guard code == CURLE_OK else {
            throw HTTPError(
                .engineUnavailable, "libcurl refused an option: \(String(cString: curl_easy_strerror(code)))",
                curlCode: Int(code.rawValue))
        }
    }
}

/// Reads an in-memory body.
private final class BytesReader: BodyReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(HTTPError) -> Int {
        let count = min(buffer.count, bytes.count - offset)
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }
}

/// A client certificate for mutual TLS: PEM files, and the key's password if it has one.
public struct ClientCertificate: Sendable {
    public var certificatePath: String
    public var keyPath: String?
    public var password: String?

    public init(certificatePath: String, keyPath: String? = nil, password: String? = nil) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.password = password
    }
}
