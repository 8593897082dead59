import COpenSSL
import COpenSSLShims
import Glibc
import PinpathSupport

/// One non-blocking TLS client handshake on a connected socket the caller owns, made from a shared
/// ``TLSClientContext``: a check's, judged inside the handshake by its own ``HandshakeVerifier``, or an audit's,
/// which verifies nothing there and records what the server showed for ``TLSAudit`` to judge afterwards.
///
/// The caller drives it: ``advance()`` runs `SSL_connect` as far as the socket allows and says what to wait
/// for; once it says ``Step/finished``, ``outcome`` holds the negotiated version and cipher or why the handshake
/// failed. Nothing but the handshake is sent: no application data, and for a check no close_notify (an audit
/// sends one once it has recorded the handshake); the caller closes the socket, which it keeps: `SSL_free` in
/// `deinit` never closes it. Its writes raise no SIGPIPE
/// (``NoSignalSocketBIO``). Not `Sendable`: driven by one thread at a
/// time. A verifier judges one handshake at a time: its ``HandshakeVerifier/lastResult`` is this handshake's.
package final class TLSClientHandshake {
    /// What ``advance()`` needs before it can go on.
    package enum Step: Sendable, Equatable {
        /// Call ``advance()`` again once the socket is readable.
        case wantRead
        /// Call ``advance()`` again once the socket is writable.
        case wantWrite
        /// Done: read ``outcome``.
        case finished
    }

    /// The context the connection was made from (kept alive with it).
    package let context: TLSClientContext
    /// The verifier judging a check's handshake; `nil` for an audit's (``init(auditing:socket:serverName:label:)``).
    package let verifier: HandshakeVerifier?
    /// The negotiated version and cipher, or why the handshake failed; `nil` until ``advance()`` returns
    /// ``Step/finished``.
    package private(set) var outcome: Result<NegotiatedTLS, TLSHandshakeFailure>?
    /// For an audit's handshake that completed: what the server showed, read before close_notify.
    package private(set) var audited: AuditedHandshake?

    private let ssl: OpaquePointer
    /// Set by OpenSSL's certificate callback, which a client runs only when the server sent a CertificateRequest.
    private let certificateRequested: UnsafeMutablePointer<Int32>
    /// The verifier's count of evaluations before this handshake: whether it ran for this one.
    private let evaluationsBefore: Int
    /// How messages name the handshake: the verifier's `host:port`, or the audit's label.
    private let endpoint: String

    /// Sets up a check's handshake on `socket` (connected, non-blocking). Sends nothing yet.
    /// - Parameters:
    ///   - serverName: the name sent in SNI, lowercased as libcurl sends it; `nil` or an IP address (which SNI
    ///     cannot carry) sends none.
    ///   - verifier: judges the server's chain inside the handshake; installed on this connection alone.
    /// - Throws: ``SecurityError`` `openSSLFailure` naming the verifier's host: OpenSSL cannot make the
    ///   connection, attach the socket or take the server name; `invalidInput` for an audit's context.
    package convenience init(context: TLSClientContext, socket: Int32, serverName: String?, verifier: HandshakeVerifier)
        throws(SecurityError)
    {
        // An audit's context verifies nothing in the handshake: a check on it would be judged by nobody.
        guard context.terms.purpose == .check else {
            throw SecurityError(.invalidInput, "\(verifier.host): a check cannot use an audit's TLS context (\(context.terms))")
        }
        try self.init(context: context, socket: socket, serverName: serverName, verifier: verifier, label: verifier.host)
    }

    /// Sets up an audit's handshake on `socket` (connected, non-blocking): no verifier is installed, the context
    /// (``TLSClientTerms/Purpose/audit``) verifies nothing and accepts any key or signature, so that any chain
    /// is seen; the OCSP staple is asked for. Once it completes, ``audited`` holds what the server showed and
    /// close_notify has been sent. Sends nothing yet.
    /// - Parameters:
    ///   - serverName: the name sent in SNI, lowercased; `nil` or an IP address sends none.
    ///   - label: how messages name the target (`valid.test:443`).
    /// - Throws: ``SecurityError`` `openSSLFailure` naming `label`; `invalidInput` for a check's context, whose
    ///   callbacks refuse every connection that has no verifier.
    package convenience init(auditing context: TLSClientContext, socket: Int32, serverName: String?, label: String)
        throws(SecurityError)
    {
        guard context.terms.purpose == .audit else {
            throw SecurityError(.invalidInput, "\(label): an audit cannot use a check's TLS context (\(context.terms))")
        }
        try self.init(context: context, socket: socket, serverName: serverName, verifier: nil, label: label)
        guard pinpath_SSL_request_ocsp_staple(ssl) == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "\(label): OpenSSL cannot ask for an OCSP staple")
        }
    }

    private init(context: TLSClientContext, socket: Int32, serverName: String?, verifier: HandshakeVerifier?, label: String)
        throws(SecurityError)
    {
        guard let ssl = SSL_new(context.pointer) else {
            throw SecurityError.openSSL(.openSSLFailure, "\(label): cannot create a TLS connection")
        }
        self.ssl = ssl
        self.context = context
        self.verifier = verifier
        certificateRequested = .allocate(capacity: 1)
        certificateRequested.initialize(to: 0)
        evaluationsBefore = verifier?.handshakesEvaluated ?? 0
        endpoint = verifier.map { "\($0.host):\($0.port)" } ?? label
        try verifier?.install(onConnection: ssl)
        if let serverName, !HostNameCheck.isIPAddress(serverName),
            pinpath_SSL_set_tlsext_host_name(ssl, serverName.lowercased()) != 1
        {
            throw SecurityError.openSSL(
                .openSSLFailure, "\(label): OpenSSL refuses the server name \"\(UntrustedText.escaped(serverName, limit: 300))\"")
        }
        guard let bio = NoSignalSocketBIO.make(socket: socket) else {
            throw SecurityError.openSSL(.openSSLFailure, "\(label): cannot attach the socket to OpenSSL")
        }
        SSL_set_bio(ssl, bio, bio)  // one reference, which the SSL takes
        SSL_set_cert_cb(
            ssl,
            { _, flag in
                flag?.assumingMemoryBound(to: Int32.self).pointee = 1
                return 1  // go on with the context's certificate, or none
            }, certificateRequested)
        SSL_set_connect_state(ssl)
    }

    deinit {
        SSL_free(ssl)
        certificateRequested.deallocate()
    }

    /// Whether the server's certificate reached this handshake's verifier (it evaluated since this handshake began).
    package var verifierReached: Bool { verifier.map { $0.handshakesEvaluated > evaluationsBefore } ?? false }

    /// Whether the server asked for a client certificate (sent a CertificateRequest) so far.
    package var serverRequestedCertificate: Bool { certificateRequested.pointee != 0 }

    /// Drives `SSL_connect` as far as the socket allows; never blocks. After ``Step/finished`` it does nothing
    /// more and returns ``Step/finished`` again.
    package func advance() -> Step {
        guard outcome == nil else { return .finished }
        ERR_clear_error()  // SSL_get_error reads the queue: it must hold only this call's reasons
        let result = SSL_connect(ssl)
        let savedErrno = errno
        if result == 1 {
            let version = SSL_get_version(ssl).map { String(cString: $0) } ?? "?"
            let cipher = SSL_get_current_cipher(ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? "?"
            outcome = .success(NegotiatedTLS(version: version, cipher: cipher))
            if verifier == nil {
                audited = AuditedHandshake(ssl, certificateRequested: serverRequestedCertificate)
                // A polite close_notify; the socket is non-blocking, so this never waits for the server's.
                _ = SSL_shutdown(ssl)
                ERR_clear_error()
            }
            return .finished
        }
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            outcome = .failure(failure(error, result: result, errno: savedErrno))
            return .finished
        }
    }

    /// What a failed `SSL_connect` means, from the verifier's verdict on this connection, OpenSSL's queue and
    /// the socket's error. Drains the queue.
    private func failure(_ error: Int32, result: Int32, errno savedErrno: Int32) -> TLSHandshakeFailure {
        let entries = drainOpenSSLErrorEntries()
        let lines = entries.map { UntrustedText.escaped($0.line, limit: 512) }
        let reasons = entries.map { UntrustedText.escaped($0.reason, limit: 512) }
        let detail = lines.joined(separator: "; ")
        func make(_ code: TLSHandshakeFailure.Code, _ reason: String, socketError: Int32 = 0) -> TLSHandshakeFailure {
            TLSHandshakeFailure(
                code: code, reason: reason, openSSLErrors: lines, openSSLReasons: reasons, socketError: socketError, endpoint: endpoint)
        }
        // The verifier ran for this handshake and did not let this connection through (its chain, or its
        // staple afterwards): whatever OpenSSL's words, the verdict is the verifier's.
        if verifierReached, let verifier, HandshakeVerifier.accepted(ssl) !== verifier {
            let why: String
            switch verifier.lastResult {
            case .success(let evaluation)?: why = evaluation.failure?.message ?? "the server's certificate was refused"
            case .failure(let error)?: why = error.message
            case nil: why = "the server's certificate was refused"
            }
            return make(.verifierRefused, "refused by the security policy: \(why)")
        }
        if error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN, lines.isEmpty {
            if error == SSL_ERROR_ZERO_RETURN || result == 0 || savedErrno == 0 {
                return make(.connectionClosed, "the server closed the connection during the TLS handshake (is it a TLS port?)")
            }
            return make(
                .socketFailure, "the TLS handshake failed: \(String(cString: strerror(savedErrno)))", socketError: savedErrno)
        }
        let text = lines.isEmpty ? "SSL_connect error \(error)" : detail
        // OpenSSL's reason for every alert the peer sent reads "… alert …" (`sslv3 alert bad certificate`).
        if lines.contains(where: { $0.contains(" alert ") }) {
            if serverRequestedCertificate {
                let sent = context.terms.clientCertificate.map { "the client certificate \($0.certificatePath) was sent" }
                return make(
                    .clientCertificate,
                    "the server asked for a client certificate (\(sent ?? "none is configured")) and ended TLS with an alert: \(text)")
            }
            return make(.protocolFailure, "the server ended TLS with an alert: \(text)")
        }
        // What OpenSSL says when the first bytes back are not a TLS record: HTTP, SSH, a banner.
        let notTLS = lines.contains { $0.contains("wrong version number") || $0.contains("packet length too long") }
        return make(.protocolFailure, "the TLS handshake failed: \(text)\(notTLS ? " (the server does not speak TLS on this port)" : "")")
    }
}
