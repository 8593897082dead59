import CCurl
import CCurlShims
import Glibc
import PinpathReachability
import PinpathSecurity

/// What libcurl calls back during a transfer, on the engine thread: the TLS context and connection checks
/// (the trust gate), the address check (the reachability gate), and the body and header bytes. A callback
/// that must stop the transfer records why in ``callbackFailure`` and returns libcurl's abort value.
extension Transfer {
    /// libcurl made a TLS context for a new connection (one per connection in 7.88): the verifier goes on it
    /// and lives as long as the connection.
    ///
    /// libcurl 7.88 calls this for an https proxy's TLS context too (`CURLOPT_SSL_CTX_FUNCTION` is copied to
    /// the proxy's settings), with nothing telling the two apart: seen on Debian 12's 7.88.1, a connection
    /// makes the proxy's context first, then the origin's inside the tunnel. So with both, even calls are
    /// the proxy's and odd ones the origin's. A libcurl that made them in another order would put each
    /// verifier on the other's handshake, where the host names differ and the policy refuses, and
    /// ``admitConnection()`` still requires the origin's verifier on the connection the request goes out on.
    func installVerifier(on sslContext: OpaquePointer) -> CURLcode {
        let ordinal = tlsContextsMade
        tlsContextsMade += 1
        let forProxy = proxyVerifier != nil && (verifier == nil || ordinal % 2 == 0)
        guard let verifier = forProxy ? proxyVerifier : verifier else { return CURLE_OK }
        do {
            try verifier.install(on: sslContext)
            return CURLE_OK
        } catch {
            callbackFailure = HTTPError(.tlsFailed, "\(description): \(error.message)")
            return CURLE_ABORTED_BY_CALLBACK
        }
    }

    /// The connection is ready (new or taken from the pool) and the request is not sent yet: it may carry the
    /// request only if a verifier accepted the handshake of this very connection (its `SSL`), under this
    /// request's terms, for this host and port. The pools keep other connections from being offered; this
    /// refuses one if that ever fails, and a connection on which TLS never started.
    ///
    /// libcurl 7.88 calls it for connection checks (`CURLOPT_CONNECT_ONLY`) too, once the protocol's connect
    /// phase is over: for a STARTTLS kind that is after the upgrade and the command libcurl sends over it.
    func admitConnection() -> Int32 {
        guard let verifier else { return CURL_PREREQFUNC_OK }
        let ssl = TransferInfo(handle: handle).ssl
        guard let ssl, let checked = HandshakeVerifier.accepted(ssl), checked.connectionServes(verifier) else {
            callbackFailure = HTTPError(.tlsFailed, "\(description): \(unverifiedConnectionRefusal(startedTLS: ssl != nil))")
            return CURL_PREREQFUNC_ABORT
        }
        connectionVerifier = checked
        // A connection check ends with the connection (it is closed before the transfer completes).
        if !kind.isHTTP { tlsSession = TransferInfo(handle: handle).tlsSession }
        return CURL_PREREQFUNC_OK
    }

    /// Why ``admitConnection()`` refused the connection, saying what was and was not sent.
    private func unverifiedConnectionRefusal(startedTLS: Bool) -> String {
        guard !kind.isHTTP else {
            return "refused to send on a connection that was not verified under this request's security policy and trust store "
                + "(the request was not sent)"
        }
        // A connection check's connect phase is over: libcurl has already sent what it sends in it.
        guard startedTLS else {
            guard let command = kind.upgradeCommand else {
                return "the connection has no TLS session, so pinpath's verifier never ran on it; refused"
            }
            return """
                the server accepted \(command) but libcurl never started TLS on the connection, so pinpath's verifier never ran \
                on it; refused, and whatever libcurl sent after \(command) went unprotected, in plaintext
                """
        }
        return """
            the TLS handshake of this connection was not accepted by pinpath's verifier under this request's security policy \
            and trust store; refused, and what libcurl's connect phase sent over it was not protected by a verified handshake
            """
    }

    /// A response line of a connection check's connect phase (the greeting, capabilities, the STARTTLS answer).
    func receiveServerLine(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        let room = TCPExchange.maximumBannerSize - serverLines.count
        if room > 0 {
            data.withMemoryRebound(to: UInt8.self, capacity: count) {
                serverLines.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(count, room)))
            }
        }
        return count
    }

    func receiveBody(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        if let bodyChannel { return streamBody(bodyChannel, data, count) }
        guard body.count + count <= options.maximumBodySize else {
            callbackFailure = HTTPError(
                .protocolError, "\(description): the response body is larger than \(options.maximumBodySize) bytes")
            return 0  // libcurl stops with CURLE_WRITE_ERROR
        }
        data.withMemoryRebound(to: UInt8.self, capacity: count) { body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count)) }
        return count
    }

    func receiveHeader(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        // This runs for every header line of every response: the line is looked at by its first bytes and kept
        // whole, to be parsed if a field is read (``HeaderFields``).
        let line = UnsafeRawBufferPointer(start: data, count: count)
        if count >= 5 && line[0] == 0x48 && line[1] == 0x54 && line[2] == 0x54 && line[3] == 0x50 && line[4] == 0x2F {  // "HTTP/"
            // A new response (100 Continue, or the final one): only the last one's fields count.
            responseHeaders = HeaderFields()
            headersComplete = false
            if tlsSession == nil, verifier != nil || proxyVerifier != nil { tlsSession = TransferInfo(handle: handle).tlsSession }
        } else if count <= 2 && line.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            headersComplete = true  // the blank line after a response's header section
            if bodyChannel != nil || options.progress != nil, !finalHeadArrived() { return 0 }
        } else if !headersComplete {
            responseHeaders.addReceived(line: line)
        }
        // Lines after the blank line are a chunked body's trailing fields: never merged into the header fields
        // (RFC 9110 §6.5.1), where a trailing Location would be followed or a Content-Type believed.
        return count
    }

    func sendBody(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        guard let bodyReader else { return 0 }
        do {
            return try bodyReader.read(into: UnsafeMutableRawBufferPointer(start: data, count: count))
        } catch {
            callbackFailure = error
            return Int(CURL_READFUNC_ABORT)
        }
    }

    /// libcurl needs the body again from its start: a new pass over the source. No other position can be
    /// reached on a stream.
    func rewindBody(_ offset: curl_off_t, _ origin: Int32) -> Int32 {
        guard offset == 0, origin == SEEK_SET, let bodySource else { return CURL_SEEKFUNC_CANTSEEK }
        do {
            bodyReader = try bodySource.makeReader()
            return CURL_SEEKFUNC_OK
        } catch {
            callbackFailure = error
            return CURL_SEEKFUNC_FAIL
        }
    }

    /// Creates the socket for an address unless the reachability monitor says it has no usable route.
    func openSocket(_ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        if let addressCheck, purpose == CURLSOCKTYPE_IPCXN, let ip = Self.ipAddress(pinpath_curl_sockaddr(address)),
            let verdict = addressCheck(ip), verdict.status == .unreachable
        {
            skippedAddresses.append(verdict)
            return CURL_SOCKET_BAD  // libcurl tries the next address
        }
        let fd = socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
        if fd >= 0 {
            socketsOpened += 1
            if bodyChannel != nil { streamSockets.append(fd) }
        }
        return fd
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
}
