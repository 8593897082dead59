import COpenSSL
import COpenSSLShims
import Glibc
import PinpathSupport

/// One TLS client connection made for an audit: owns the socket, which it closes in `deinit`. Its `SSL` is made
/// from a context shared by every audit under the same terms (``TLSClientContexts``, ``TLSClientTerms/Purpose/audit``):
/// OpenSSL 3.0 caches the algorithms it fetches in a context, so a context per connection cost each handshake
/// about a fifth more CPU. What belongs to one connection stays on its `SSL`: the socket, SNI, the staple request
/// and the callback that records a CertificateRequest.
///
/// The handshake verifies nothing (`SSL_VERIFY_NONE`) and accepts any key size or signature (security level
/// 0): the audit must see the chain even when it is invalid, and judges it afterwards with ``SecurityPolicy``
/// at the usual level. No application data is sent. Not `Sendable`: made, read and dropped on one thread.
final class TLSConnection {
    /// What a completed handshake showed.
    struct Handshake {
        /// The negotiated protocol (`TLSv1.3`). From `SSL_get_version`.
        let protocolVersion: String
        /// The negotiated cipher suite by OpenSSL's name (`TLS_AES_256_GCM_SHA384`). From `SSL_CIPHER_get_name`.
        let cipher: String
        /// The certificates the server sent, leaf first, as sent. From `SSL_get_peer_cert_chain`.
        let servedChain: [Certificate]
        /// The OCSP response the server stapled, or `nil`. From `SSL_get_tlsext_status_ocsp_resp`.
        let stapledOCSPResponse: [UInt8]?
        /// The server's request for a client certificate, or `nil` when it asked for none.
        let clientCertificateRequest: ClientCertificateRequest?
    }

    /// The audit contexts of audits run alone and of the expiry proof's second handshakes (``KeyPossessionCheck``),
    /// for the life of the process; a ``TLSAuditBatch`` has its own. A client certificate rotated in place builds a
    /// new one (``TLSClientContexts/context(for:)``).
    static let sharedContexts = TLSClientContexts()

    /// The address the socket connected to (`127.0.0.1:4433`).
    let address: String
    private let label: String
    private let socket: Int32

    /// Connects a TCP socket to `endpoint` before `deadline`.
    /// - Parameter label: how messages name the target (`valid.test:443`), which may differ from the
    ///   endpoint dialled (`--connect`).
    /// - Throws: ``TLSConnectionError`` naming `label`.
    init(connectingTo endpoint: TLSEndpoint, label: String, deadline: ContinuousClock.Instant) throws(TLSConnectionError) {
        (socket, address) = try Self.connect(endpoint, label: label, deadline: deadline)
        self.label = label
    }

    deinit {
        close(socket)
    }

    /// The audit context for `clientCertificate` in `contexts`, for a task: looked up (and built on first use)
    /// off the cooperative pool, by ``TLSClientContexts/context(for:deadline:)``, so audits that ask at once share
    /// one build.
    /// - Parameter label: how messages name the target.
    static func context(
        clientCertificate: (certificate: String, key: String?)?, in contexts: TLSClientContexts, label: String,
        deadline: ContinuousClock.Instant
    ) async -> Result<TLSClientContext, TLSConnectionError> {
        do {
            return .success(try await contexts.context(for: terms(clientCertificate), deadline: deadline))
        } catch {
            return .failure(contextError(error, label: label))
        }
    }

    /// The same as ``context(clientCertificate:in:label:deadline:)``, on the calling thread, which it may block
    /// as long as the client certificate's files do.
    static func context(
        clientCertificate: (certificate: String, key: String?)?, in contexts: TLSClientContexts, label: String
    ) -> Result<TLSClientContext, TLSConnectionError> {
        do {
            return .success(try contexts.context(for: terms(clientCertificate)))
        } catch {
            return .failure(contextError(error, label: label))
        }
    }

    /// An audit's terms: a client certificate (PEM, its chain after it) and key to send when the server asks for
    /// one, checked beforehand (``ClientIdentity``): an encrypted key is refused, never asked for.
    private static func terms(_ clientCertificate: (certificate: String, key: String?)?) -> TLSClientTerms {
        TLSClientTerms(
            purpose: .audit,
            clientCertificate: clientCertificate.map { ClientCertificateFiles(certificatePath: $0.certificate, keyPath: $0.key) })
    }

    private static func contextError(_ error: SecurityError, label: String) -> TLSConnectionError {
        TLSConnectionError(
            error.code == .timedOut ? .timedOut : .openSSLFailure, "\(label): cannot use the client certificate: \(error.message)")
    }

    /// Completes a TLS handshake before `deadline` on a connection made from `context` (an audit's: see
    /// ``context(clientCertificate:in:label:deadline:)``), then sends close_notify.
    /// - Parameter serverName: the SNI name to send; `nil` (or an IP address, which SNI cannot carry) sends none.
    /// - Throws: ``TLSConnectionError`` naming the label: a timeout, an alert, or an answer that is not TLS.
    func handshake(serverName: String?, context: TLSClientContext, deadline: ContinuousClock.Instant) throws(TLSConnectionError)
        -> Handshake
    {
        guard let ssl = SSL_new(context.pointer) else {
            throw Self.openSSLError(.openSSLFailure, "\(label): cannot create an SSL")
        }
        defer { SSL_free(ssl) }
        // OpenSSL calls the certificate callback of a client only when the server sent a CertificateRequest.
        let asked = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        asked.initialize(to: 0)
        defer { asked.deallocate() }
        SSL_set_cert_cb(
            ssl,
            { _, flag in
                flag?.assumingMemoryBound(to: Int32.self).pointee = 1
                return 1
            }, asked)
        defer { SSL_set_cert_cb(ssl, nil, nil) }
        if let serverName, !HostNameCheck.isIPAddress(serverName), pinpath_SSL_set_tlsext_host_name(ssl, serverName) != 1 {
            throw Self.openSSLError(.openSSLFailure, "\(label): OpenSSL refuses the server name \"\(serverName)\"")
        }
        guard pinpath_SSL_request_ocsp_staple(ssl) == 1 else {
            throw Self.openSSLError(.openSSLFailure, "\(label): OpenSSL cannot ask for an OCSP staple")
        }
        guard SSL_set_fd(ssl, socket) == 1 else {
            throw Self.openSSLError(.openSSLFailure, "\(label): cannot attach the socket to OpenSSL")
        }
        try Self.handshake(ssl, socket: socket, label: label, deadline: deadline)
        var chain: [Certificate] = []
        if let stack = SSL_get_peer_cert_chain(ssl) {  // on a client, the leaf is included
            for index in 0..<pinpath_sk_X509_num(stack) {
                if let x509 = pinpath_sk_X509_value(stack, index), let certificate = Certificate(referencing: x509) {
                    chain.append(certificate)
                }
            }
        }
        let handshake = Handshake(
            protocolVersion: SSL_get_version(ssl).map { String(cString: $0) } ?? "unknown",
            cipher: SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? "unknown",
            servedChain: chain, stapledOCSPResponse: Self.stapledOCSPResponse(ssl),
            clientCertificateRequest: asked.pointee == 0
                ? nil : ClientCertificateRequest(authorities: Self.clientAuthorities(ssl), certificateSent: SSL_get_certificate(ssl) != nil)
        )
        // A polite close_notify; the socket is non-blocking, so this never waits for the server's.
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        return handshake
    }

    /// The CA names the server's CertificateRequest carried. On a client, `SSL_get_client_CA_list` returns them.
    private static func clientAuthorities(_ ssl: OpaquePointer) -> [String] {
        guard let names = SSL_get_client_CA_list(ssl) else { return [] }
        return (0..<pinpath_sk_X509_NAME_num(names)).compactMap { index in
            pinpath_sk_X509_NAME_value(names, index).map { Certificate.name($0) }
        }
    }

    private static func stapledOCSPResponse(_ ssl: OpaquePointer) -> [UInt8]? {
        var bytes: UnsafePointer<UInt8>?
        let length = pinpath_SSL_get_tlsext_status_ocsp_resp(ssl, &bytes)
        guard length > 0, let bytes else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    // MARK: - TCP

    /// Resolves and tries each address in turn with a non-blocking `connect` bounded by `poll`; returns the
    /// connected socket (the caller owns it) and the address in text.
    private static func connect(
        _ endpoint: TLSEndpoint, label: String, deadline: ContinuousClock.Instant
    ) throws(TLSConnectionError) -> (Int32, String) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var addresses: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &addresses)
        guard status == 0, let first = addresses else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            throw TLSConnectionError(.dnsFailure, "\(label): cannot resolve \(endpoint.host): \(reason)")
        }
        defer { freeaddrinfo(addresses) }
        var lastError: TLSConnectionError?
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next?.pointee {
            next = info.ai_next
            let text = addressText(info.ai_addr, info.ai_addrlen, port: endpoint.port)
            let fd = Glibc.socket(
                info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                info.ai_protocol)
            guard fd >= 0 else {
                lastError = connectError(errno, label: label, address: text)
                continue
            }
            var failure: Int32 = 0
            if Glibc.connect(fd, info.ai_addr, info.ai_addrlen) != 0 {
                failure = errno
                if failure == EINPROGRESS {
                    switch wait(fd, for: POLLOUT, until: deadline) {
                    case .ready:
                        var length = socklen_t(MemoryLayout<Int32>.size)
                        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) != 0 { failure = errno }
                    case .timedOut:
                        close(fd)
                        throw TLSConnectionError(.timedOut, "\(label): no TCP connection to \(text) within the timeout")
                    case .failed(let code):
                        failure = code
                    }
                }
            }
            if failure == 0 { return (fd, text) }
            close(fd)
            lastError = connectError(failure, label: label, address: text)
        }
        throw lastError ?? TLSConnectionError(.dnsFailure, "\(label): \(endpoint.host) has no address")
    }

    private static func connectError(_ code: Int32, label: String, address: String) -> TLSConnectionError {
        let reason = String(cString: strerror(code))
        switch code {
        case ECONNREFUSED:
            return TLSConnectionError(.connectionRefused, "\(label): connection refused by \(address) (nothing listening?)")
        case ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, EAFNOSUPPORT:
            return TLSConnectionError(.unreachable, "\(label): cannot reach \(address): \(reason)")
        case ETIMEDOUT:
            return TLSConnectionError(.timedOut, "\(label): no TCP connection to \(address): \(reason)")
        default:
            return TLSConnectionError(.connectFailed, "\(label): cannot connect to \(address): \(reason)")
        }
    }

    /// What `poll` said before the deadline.
    private enum Readiness {
        case ready
        case timedOut
        case failed(Int32)
    }

    /// Polls `fd` for `events` until the deadline, retrying EINTR.
    private static func wait(_ fd: Int32, for events: Int32, until deadline: ContinuousClock.Instant) -> Readiness {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .timedOut }
            // Rounded up, so a wait never ends just before the deadline and spins.
            let milliseconds = Int32(clamping: remaining.millisecondsRoundedUp)
            var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return .ready }
            if ready < 0 && errno != EINTR { return .failed(errno) }
        }
    }

    /// `host:port` or `[v6]:port` of a resolved address. Wraps `getnameinfo` with `NI_NUMERICHOST`.
    private static func addressText(_ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t, port: Int) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard let address, getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return "?:\(port)"
        }
        return TLSEndpoint(host: String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port: port)
            .description
    }

    // MARK: - TLS

    /// Drives `SSL_connect` on the non-blocking socket, waiting in `poll` for what OpenSSL asks.
    private static func handshake(
        _ ssl: OpaquePointer, socket: Int32, label: String, deadline: ContinuousClock.Instant
    ) throws(TLSConnectionError) {
        while true {
            ERR_clear_error()  // SSL_get_error reads the queue: it must hold only this call's reasons
            let result = SSL_connect(ssl)
            if result == 1 { return }
            let error = SSL_get_error(ssl, result)
            let savedErrno = errno
            switch error {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                switch wait(socket, for: error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, until: deadline) {
                case .ready:
                    continue
                case .timedOut:
                    throw TLSConnectionError(
                        .timedOut, "\(label): no TLS handshake within the timeout (the server sent no TLS answer; is it a TLS port?)")
                case .failed(let code):
                    throw TLSConnectionError(.handshakeFailed, "\(label): poll failed: \(String(cString: strerror(code)))")
                }
            case SSL_ERROR_SYSCALL:
                let reasons = drainOpenSSLErrors()
                if !reasons.isEmpty {
                    throw TLSConnectionError(.handshakeFailed, "\(label): TLS handshake failed: \(reasons.joined(separator: "; "))")
                }
                if result == 0 || savedErrno == 0 {
                    throw TLSConnectionError(
                        .handshakeFailed, "\(label): the server closed the connection during the TLS handshake (is it a TLS port?)")
                }
                throw TLSConnectionError(.handshakeFailed, "\(label): TLS handshake failed: \(String(cString: strerror(savedErrno)))")
            case SSL_ERROR_ZERO_RETURN:
                throw TLSConnectionError(.handshakeFailed, "\(label): the server closed the TLS connection during the handshake")
            default:
                let reasons = drainOpenSSLErrors()
                let text = reasons.isEmpty ? "SSL_connect error \(error)" : reasons.joined(separator: "; ")
                // What OpenSSL says when the first bytes back are not a TLS record: HTTP, SSH, a banner.
                let notTLS = reasons.contains { $0.contains("wrong version number") || $0.contains("packet length too long") }
                throw TLSConnectionError(
                    .handshakeFailed,
                    "\(label): TLS handshake failed: \(text)\(notTLS ? " (the server does not speak TLS on this port)" : "")")
            }
        }
    }

    private static func openSSLError(_ code: TLSConnectionError.Code, _ message: String) -> TLSConnectionError {
        let reasons = drainOpenSSLErrors()
        return TLSConnectionError(code, reasons.isEmpty ? message : "\(message) (\(reasons.joined(separator: "; ")))")
    }
}
