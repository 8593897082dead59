import CCurl
import CCurlShims
import PinpathSupport

/// The options a transfer sets on its easy handle before the engine adds it: URL, limits, method and body,
/// headers, TLS and the callbacks (`Transfer+Callbacks.swift`).
extension Transfer {
    func configure(clientCertificate: ClientCertificate?, connectTo: String?) throws(HTTPError) {
        try set(CURLOPT_URL, curlURL)
        try set(CURLOPT_PRIVATE, pointer: context)  // how the engine finds the transfer of a finished handle
        try set(CURLOPT_NOSIGNAL, 1)  // several threads; timeouts are libcurl's own
        // A transfer ended during its name look-up (timeout, cancel) leaves the resolver thread to finish alone:
        // by default libcurl waits for it, holding the engine's thread, and so every other transfer, until the
        // DNS server answers or the resolver gives up. The thread frees its memory when getaddrinfo returns.
        try set(CURLOPT_QUICK_EXIT, 1)
        try set(CURLOPT_ERRORBUFFER, pointer: errorBuffer)
        try set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(options.connectTimeout))
        // A streamed transfer's timeout bounds its head only: the engine keeps its deadlines (``nextDeadline(now:)``).
        if bodyChannel == nil { try set(CURLOPT_TIMEOUT_MS, Self.milliseconds(options.timeout)) }
        try set(CURLOPT_FOLLOWLOCATION, 0)  // the session follows redirects itself, so each hop is gated
        // One kind's protocol only: libcurl never switches to another (a redirect, a plaintext fallback).
        try set(CURLOPT_PROTOCOLS_STR, kind.isHTTP ? "http,https" : kind.curlScheme)
        switch options.ipFamily {
        case nil: break
        case .ipv4: try set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V4))
        case .ipv6: try set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V6))
        }
        if kind.isHTTP {
            try configureHTTP()
        } else {
            try configureConnectionCheck()
        }
        if let connectTo {
            guard let list = curl_slist_append(nil, connectTo) else {
                throw HTTPError(.engineUnavailable, "libcurl cannot store the server name's address (out of memory?)")
            }
            connectToList = list
            try set(CURLOPT_CONNECT_TO, pointer: list)
        }
        try configureProxy()
        if kind.usesTLS {
            try configureTLS(clientCertificate: clientCertificate)
        }
        if verifier != nil || proxyVerifier != nil {
            try set(CURLOPT_SSL_SESSIONID_CACHE, 0)  // for the proxy's handshakes too (libcurl copies it)
            try check(
                pinpath_curl_set_ssl_ctx_callback(handle) { _, sslContext, context in
                    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().installVerifier(on: OpaquePointer(sslContext!))
                })
            try set(CURLOPT_SSL_CTX_DATA, pointer: context)
        }
        // A plain streamed body's sockets are known, for its check for bytes past the body (``streamSockets``).
        let plainStream = bodyChannel != nil && !kind.usesTLS && proxy?.scheme != .https
        if plainStream { try set(CURLOPT_FRESH_CONNECT, 1) }
        if addressCheck != nil || plainStream {
            try check(
                pinpath_curl_set_open_socket_callback(handle) { context, purpose, address in
                    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().openSocket(purpose, address!)
                })
            try set(CURLOPT_OPENSOCKETDATA, pointer: context)
        }
    }

    /// The URL libcurl is given: ``ServiceKind/curlScheme`` in place of `tls` and `tcp`.
    private var curlURL: String {
        let text = request.url.absoluteString
        guard !kind.isHTTP, let separator = text.firstRange(of: "://") else { return text }
        return kind.curlScheme + text[separator.lowerBound...]
    }

    private func configureHTTP() throws(HTTPError) {
        // A collected body is decoded (every coding this libcurl knows), and bounded by maximumBodySize after
        // decoding. A streamed one is not: libcurl would decode a whole socket read at once, 16 KiB of a gzip
        // bomb into 16 MiB, and keep all of it while the consumer holds the transfer paused (up to 64 MiB per
        // transfer). Without the option libcurl asks for no coding and passes the bytes as they came (the
        // request's own Accept-Encoding still goes); the head's Content-Encoding says what they are.
        if bodyChannel == nil { try set(CURLOPT_ACCEPT_ENCODING, CurlRuntime.contentCodings) }
        // A stream goes over HTTP/1.1 (ALPN offers http/1.1 only, and libcurl takes no pooled HTTP/2 connection
        // for it), where TCP's flow control holds back a paused transfer. Over HTTP/2, pausing cannot take back
        // the window credit already granted: libcurl 7.88 grants each stream 32 MiB, has no option to lower it,
        // and buffers whatever arrives for a paused stream while the shared connection is read for another one.
        try set(CURLOPT_HTTP_VERSION, Int(bodyChannel == nil ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1))
        // A body announced (Content-Length) larger than the limit is refused before any of it is read;
        // receiveBody still counts, for chunked bodies and servers that announce less than they send. Not for
        // HEAD: libcurl would apply it to the length of the body a HEAD response only describes.
        // A streamed body has no size limit: its consumer decides.
        if request.method != .head, bodyChannel == nil {
            try set(CURLOPT_MAXFILESIZE_LARGE, options.maximumBodySize, offset: true)
        }
        if options.freshConnection {
            try set(CURLOPT_FRESH_CONNECT, 1)
            try set(CURLOPT_FORBID_REUSE, 1)
        }
        try check(
            pinpath_curl_set_data_callback(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                Unmanaged<Transfer>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.receiveBody(data!, size * count) }
            })
        try set(CURLOPT_WRITEDATA, pointer: context)
        try check(
            pinpath_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                Unmanaged<Transfer>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.receiveHeader(data!, size * count) }
            })
        try set(CURLOPT_HEADERDATA, pointer: context)
        if bodyChannel != nil { try configureStreaming() }
        if options.progress != nil {
            try set(CURLOPT_NOPROGRESS, 0)  // only then: libcurl calls the callback on every turn
            try check(
                pinpath_curl_set_xferinfo_callback(handle) { context, _, received, _, sent in
                    Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().reportProgress(received: received, sent: sent)
                })
            try set(CURLOPT_XFERINFODATA, pointer: context)
        }
        try configureMethodAndBody()
        try configureHeaders()
    }

    /// A streamed body: libcurl's texts are read for the one way 7.88 reports a body longer than announced
    /// (``readDebugText(_:_:_:)``); a proxy's CONNECT response is not handed to the header callback, where
    /// its blank line would read as the head's end.
    private func configureStreaming() throws(HTTPError) {
        try set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        try check(
            pinpath_curl_set_debug_callback(handle) { _, type, data, count, context in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().readDebugText(type, data!, count)
            })
        try set(CURLOPT_DEBUGDATA, pointer: context)
        try set(CURLOPT_VERBOSE, 1)
    }

    /// A connection check (`tls://`, `tcp://`, mail, FTP, LDAP): `CURLOPT_CONNECT_ONLY` runs the protocol's
    /// connect phase and sends no request. Always a new connection, so every check is a full handshake. A
    /// STARTTLS kind requires the upgrade (`CURLUSESSL_ALL`): a server that does not offer it fails with
    /// `CURLE_USE_SSL_FAILED` before anything else is sent, never continuing in plaintext.
    private func configureConnectionCheck() throws(HTTPError) {
        try set(CURLOPT_CONNECT_ONLY, 1)
        try set(CURLOPT_FRESH_CONNECT, 1)
        // Closed as soon as the check is done, except a tcp:// exchange's, whose socket is taken when the
        // transfer completes (libcurl closes it when the handle leaves the engine).
        if !(kind == .tcp && options.tcpExchange != nil) { try set(CURLOPT_FORBID_REUSE, 1) }
        if kind.upgradesWithSTARTTLS { try set(CURLOPT_USE_SSL, Int(CURLUSESSL_ALL.rawValue)) }
        // libcurl hands the server's response lines of the connect phase (the greeting first) to the header callback.
        try check(
            pinpath_curl_set_data_callback(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().receiveServerLine(data!, size * count)
            })
        try set(CURLOPT_HEADERDATA, pointer: context)
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
            if method == .post {
                try set(CURLOPT_POSTFIELDSIZE_LARGE, 0, offset: true)
                try set(CURLOPT_POST, 1)
            }
            return
        }
        bodyReader = try bodySource.makeReader()
        try set(CURLOPT_POST, 1)
        try set(CURLOPT_POSTFIELDSIZE_LARGE, bodySource.count, offset: true)
        try check(
            pinpath_curl_set_data_callback(handle, CURLOPT_READFUNCTION) { data, size, count, context in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().sendBody(data!, size * count)
            })
        try set(CURLOPT_READDATA, pointer: context)
        try check(
            pinpath_curl_set_seek_callback(handle) { context, offset, origin in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().rewindBody(offset, origin)
            })
        try set(CURLOPT_SEEKDATA, pointer: context)
    }

    private func configureHeaders() throws(HTTPError) {
        // libcurl waits up to a second for `100 Continue` before sending a large body; servers rarely send it.
        let suppressingExpect = bodySource != nil && request.headers["Expect"] == nil
        headerList = try headerLists.list(for: request.headers, suppressingExpect: suppressingExpect)
        if let headerList { try set(CURLOPT_HTTPHEADER, pointer: headerList.pointer) }
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
        try check(
            pinpath_curl_set_prereq_callback(handle) { context, _, _, _, _ in
                Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue().admitConnection()
            })
        try set(CURLOPT_PREREQDATA, pointer: context)
        if let clientCertificate {
            try set(CURLOPT_SSLCERT, clientCertificate.certificatePath)
            if let key = clientCertificate.keyPath { try set(CURLOPT_SSLKEY, key) }
            if let password = clientCertificate.password { try set(CURLOPT_KEYPASSWD, password) }
        }
    }

    /// The proxy, stated on every handle: `CURLOPT_PROXY` empty for none, and an empty `CURLOPT_NOPROXY`
    /// (``ProxySettings`` already applied `no_proxy`), so libcurl reads no `*_proxy` variable behind the
    /// session's back. Credentials go as options of their own, never in the URL libcurl could quote. An https
    /// proxy's certificate is verified as the origin's is: peer verification on, no CA file (the verifier
    /// brings the store), the verdict the proxy's policy's.
    private func configureProxy() throws(HTTPError) {
        try set(CURLOPT_NOPROXY, "")
        guard let proxy else {
            try set(CURLOPT_PROXY, "")
            return
        }
        try set(CURLOPT_PROXY, proxy.curlURL)
        try set(CURLOPT_PROXYTYPE, Int(proxy.scheme == .https ? CURLPROXY_HTTPS.rawValue : CURLPROXY_HTTP.rawValue))
        if let username = proxy.username {
            // libcurl percent-decodes both: they go encoded, to arrive as they are. Basic, libcurl's default CURLOPT_PROXYAUTH.
            try set(CURLOPT_PROXYUSERNAME, Proxy.percentEncoded(username))
            try set(CURLOPT_PROXYPASSWORD, Proxy.percentEncoded(proxy.password ?? ""))
        }
        guard proxy.scheme == .https else { return }
        guard let proxyVerifier else { throw HTTPError(.engineUnavailable, "an https proxy without a verifier") }
        try set(CURLOPT_PROXY_SSL_VERIFYPEER, 1)
        try set(CURLOPT_PROXY_SSL_VERIFYHOST, proxyVerifier.policy.validatesDomainName ? 2 : 0)
        try set(CURLOPT_PROXY_CAINFO, pointer: nil)
        try set(CURLOPT_PROXY_CAPATH, pointer: nil)
    }

    /// At least 1: libcurl reads 0 as no timeout (CURLOPT_TIMEOUT_MS) or its own default (CURLOPT_CONNECTTIMEOUT_MS).
    private static func milliseconds(_ duration: Duration) -> Int {
        max(1, Int(duration.wholeMilliseconds))
    }

    private func set(_ option: CURLoption, _ value: Int, offset: Bool = false) throws(HTTPError) {
        try check(offset ? pinpath_curl_setopt_off_t(handle, option, curl_off_t(value)) : pinpath_curl_setopt_long(handle, option, value))
    }

    private func set(_ option: CURLoption, _ value: String) throws(HTTPError) {
        // libcurl copies string options (since 7.17), so the C string need only live for the call. `withCString`
        // lends a native string's own bytes; passing the String makes a temporary array of them.
        try check(value.withCString { pinpath_curl_setopt_pointer(handle, option, $0) })
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
