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
///
/// The handshake is ``TLSClientHandshake``'s step machine (an audit's: no verifier), driven here by `poll` on a
/// thread of the blocking pool; `pinpath audit` drives the same machine on a `Session`'s handshake engine
/// instead, and both word their failures with ``TLSConnectionError``'s audit words (``TLSConnectionError/handshakeFailure(_:label:)``).
package final class TLSConnection {
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
        -> AuditedHandshake
    {
        let handshake: TLSClientHandshake
        do {
            handshake = try TLSClientHandshake(auditing: context, socket: socket, serverName: serverName, label: label)
        } catch {
            throw TLSConnectionError(.openSSLFailure, error.message)
        }
        while true {
            let step = handshake.advance()
            guard step != .finished else { break }
            switch Self.wait(socket, for: step == .wantRead ? POLLIN : POLLOUT, until: deadline) {
            case .ready: continue
            case .timedOut: throw TLSConnectionError.handshakeTimeout(label: label)
            case .failed(let code):
                throw TLSConnectionError(.handshakeFailed, "\(label): poll failed: \(String(cString: strerror(code)))")
            }
        }
        return try handshake.auditResult(label: label).get()
    }

    // MARK: - TCP

    /// Resolves and tries each address in turn with a non-blocking `connect` bounded by `poll`; returns the
    /// connected socket (the caller owns it) and the address in text.
    private static func connect(
        _ endpoint: TLSEndpoint, label: String, deadline: ContinuousClock.Instant
    ) throws(TLSConnectionError) -> (Int32, String) {
        let addresses = try resolve(endpoint, label: label)
        defer { freeaddrinfo(addresses) }
        var lastError: TLSConnectionError?
        var next: UnsafeMutablePointer<addrinfo>? = addresses
        while let info = next?.pointee {
            next = info.ai_next
            let text = addressText(info.ai_addr, info.ai_addrlen, port: endpoint.port)
            let fd = Glibc.socket(
                info.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                info.ai_protocol)
            guard fd >= 0 else {
                lastError = TLSConnectionError.connectFailure(errno, label: label, address: text)
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
                        throw TLSConnectionError.connectTimeout(label: label, address: text)
                    case .failed(let code):
                        failure = code
                    }
                }
            }
            if failure == 0 { return (fd, text) }
            close(fd)
            lastError = TLSConnectionError.connectFailure(failure, label: label, address: text)
        }
        throw lastError ?? TLSConnectionError(.dnsFailure, "\(label): \(endpoint.host) has no address")
    }

    /// The addresses `endpoint`'s host resolves to, in the resolver's order, as numeric text (`127.0.0.1`, `::1`):
    /// for a caller that connects to them itself (the handshake engine). Blocks in `getaddrinfo`, unbounded by
    /// the audit's timeout, as an audit's own connection does.
    /// - Throws: ``TLSConnectionError`` `dnsFailure` naming `label` and the host.
    package static func addresses(of endpoint: TLSEndpoint, label: String) throws(TLSConnectionError) -> [String] {
        let addresses = try resolve(endpoint, label: label)
        defer { freeaddrinfo(addresses) }
        var found: [String] = []
        var next: UnsafeMutablePointer<addrinfo>? = addresses
        while let info = next?.pointee {
            next = info.ai_next
            if let text = numericHost(info.ai_addr, info.ai_addrlen), !found.contains(text) { found.append(text) }
        }
        return found
    }

    /// `getaddrinfo` for a TCP connection to `endpoint`; the caller frees the list (`freeaddrinfo`).
    private static func resolve(_ endpoint: TLSEndpoint, label: String) throws(TLSConnectionError) -> UnsafeMutablePointer<addrinfo> {
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
        return first
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

    /// `host:port` or `[v6]:port` of a resolved address.
    private static func addressText(_ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t, port: Int) -> String {
        guard let host = numericHost(address, length) else { return "?:\(port)" }
        return TLSEndpoint(host: host, port: port).description
    }

    /// A resolved address as text (`127.0.0.1`, `::1`). Wraps `getnameinfo` with `NI_NUMERICHOST`.
    private static func numericHost(_ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t) -> String? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard let address, getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
            return nil
        }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
