import COpenSSL
import COpenSSLShims
import FoundationEssentials
import Synchronization

/// Runs a ``SecurityPolicy`` inside an OpenSSL handshake, as the `SSL_CTX`'s certificate verification
/// callback, so that a connection is refused before any request byte is sent.
///
/// Installed on a context (libcurl's, one per connection), the verifier lives as long as that context: the
/// context holds a reference (its ex_data), which OpenSSL drops when the context is freed, and every `SSL` made
/// from it keeps it alive. So a pooled connection can be checked again however long it outlives the request
/// that opened it. Install it on a context used for one host (the host is part of the evaluation), with peer
/// verification on (`SSL_VERIFY_PEER`) and, for libcurl, `CURLOPT_SSL_VERIFYPEER` 1 and the session cache off
/// (resumed sessions skip the callback).
///
/// Installed on a connection (an `SSL` of a context shared by many, ``TLSClientContext``), it lives as long as
/// that `SSL`; the shared context's callbacks find it there, and refuse a connection without one.
package final class HandshakeVerifier: Sendable {
    /// What a verdict depends on apart from the peer and the name it is for: a connection verified under some
    /// terms may carry only requests made under equal terms.
    package struct Terms: Hashable, Sendable {
        let policy: SecurityPolicy
        let trustStore: TrustStore
        let verificationTime: Date?
    }

    /// The policy applied.
    package let policy: SecurityPolicy
    /// The host name or IP address the connection is for.
    package let host: String
    /// The port, for reports.
    package let port: Int
    private let trustStore: TrustStore
    private let verificationTime: Date?
    private let ocspResponses: OCSPResponseCache?
    // Written on whatever thread runs the handshake, read by the caller afterwards.
    private let last = Mutex<Result<TrustEvaluation, SecurityError>?>(nil)
    private let lastVersion = Mutex<String?>(nil)
    private let evaluations = Atomic<Int>(0)

    /// Creates a verifier; see ``SecurityPolicy/evaluate(servedChain:host:port:trustStore:verificationTime:now:)``.
    /// - Parameter ocspResponses: under ``RevocationMode/ocsp``, the answers of OCSP responders fetched so far:
    ///   a handshake whose leaf has none stops (``TrustFailure/Reason/ocspQueryNeeded``, the question in
    ///   ``pendingOCSPQuery``) for its owner to ask and connect again. `nil`: no responder can be asked, and
    ///   without a staple the leaf's status is unavailable.
    package init(
        policy: SecurityPolicy, host: String, port: Int = 443, trustStore: TrustStore, verificationTime: Date? = nil,
        ocspResponses: OCSPResponseCache? = nil
    ) {
        self.policy = policy
        self.host = host
        self.port = port
        self.trustStore = trustStore
        self.verificationTime = verificationTime
        self.ocspResponses = ocspResponses
    }

    /// The outcome of the most recent handshake's evaluation, or the error that stopped it from running.
    package var lastResult: Result<TrustEvaluation, SecurityError>? { last.withLock { $0 } }

    /// The TLS version the most recent evaluated handshake negotiated (`TLSv1.3`), read when its certificate
    /// reached the verifier: known for a handshake the verifier refused too, when libcurl has already dropped the
    /// connection.
    package var lastProtocolVersion: String? { lastVersion.withLock { $0 } }

    /// The question for the leaf's OCSP responder the last handshake stopped for, if it did.
    package var pendingOCSPQuery: OCSPQuery? {
        guard case .success(let evaluation)? = lastResult else { return nil }
        return evaluation.pendingOCSPQuery
    }

    /// How many handshakes this verifier has evaluated.
    package var handshakesEvaluated: Int { evaluations.load(ordering: .relaxed) }

    /// The policy, trust store and verification time the verdicts depend on.
    package var terms: Terms { Terms(policy: policy, trustStore: trustStore, verificationTime: verificationTime) }

    /// Whether a connection this verifier let through may carry a request that `request` was made for: same
    /// terms, same host (names compare without case, as libcurl matches them) and port.
    package func connectionServes(_ request: HandshakeVerifier) -> Bool {
        guard case .success(let evaluation) = lastResult, evaluation.allowsConnection else { return false }
        return terms == request.terms && host.lowercased() == request.host.lowercased() && port == request.port
    }

    /// Installs the evaluation as the certificate verification callback of an OpenSSL `SSL_CTX*` made for this
    /// verifier alone (libcurl makes one per connection), which keeps the verifier alive until it is freed. The
    /// context gets the callbacks ``prepareContext(_:)`` sets; they find this verifier through the context's
    /// ex_data. Wraps `SSL_CTX_set_ex_data`.
    /// - Parameter sslContext: an `SSL_CTX*` for one connection.
    /// - Throws: ``SecurityError`` `openSSLFailure` when the context already carries a verifier (a context shared
    ///   by connections made for different requests) or OpenSSL cannot store the reference.
    package func install(on sslContext: OpaquePointer) throws(SecurityError) {
        guard let slot = Self.contextSlot else {
            throw SecurityError(.openSSLFailure, "\(host): OpenSSL has no ex_data index for the handshake verifier")
        }
        guard SSL_CTX_get_ex_data(sslContext, slot) == nil else {
            throw SecurityError(.openSSLFailure, "\(host): the TLS context already carries a handshake verifier")
        }
        let owned = Unmanaged.passRetained(self)
        guard SSL_CTX_set_ex_data(sslContext, slot, owned.toOpaque()) == 1 else {
            owned.release()
            throw SecurityError.openSSL(.openSSLFailure, "\(host): cannot attach the handshake verifier to the TLS context")
        }
        do {
            try Self.prepareContext(sslContext)
        } catch {
            throw SecurityError(error.code, "\(host): \(error.message)")
        }
    }

    /// Installs the evaluation on one connection (an `SSL*` made from a context shared by many, prepared by
    /// ``prepareContext(_:)``), which keeps the verifier alive until the `SSL` is freed. Wraps `SSL_set_ex_data`.
    /// - Throws: ``SecurityError`` `openSSLFailure` when the connection already carries a verifier or OpenSSL
    ///   cannot store the reference.
    package func install(onConnection ssl: OpaquePointer) throws(SecurityError) {
        guard let slot = Self.installedSlot else {
            throw SecurityError(.openSSLFailure, "\(host): OpenSSL has no ex_data index for the handshake verifier")
        }
        guard SSL_get_ex_data(ssl, slot) == nil else {
            throw SecurityError(.openSSLFailure, "\(host): the TLS connection already carries a handshake verifier")
        }
        let owned = Unmanaged.passRetained(self)
        guard SSL_set_ex_data(ssl, slot, owned.toOpaque()) == 1 else {
            owned.release()
            throw SecurityError.openSSL(.openSSLFailure, "\(host): cannot attach the handshake verifier to the TLS connection")
        }
    }

    /// Makes an `SSL_CTX*` run the verifier of each of its connections in the handshake: the certificate
    /// verification and OCSP status callbacks find the verifier installed on the connection
    /// (``install(onConnection:)``), else the one installed on the context (``install(on:)``), and refuse a
    /// connection that has neither. Refuses renegotiation (`SSL_OP_NO_RENEGOTIATION`): a second handshake on an
    /// established connection would put a new chain under a request already admitted. Removes any key-log
    /// callback (`SSL_CTX_set_keylog_callback`), which libcurl sets for SSLKEYLOGFILE. Asks for the server's
    /// OCSP staple and judges it in the status callback under the policy's ``SecurityPolicy/revocation``.
    ///
    /// Wraps `SSL_CTX_set_options`, `SSL_CTX_set_cert_verify_callback`, `SSL_CTX_set_tlsext_status_type` and
    /// `SSL_CTX_set_tlsext_status_cb`. A rejection sets `X509_V_ERR_APPLICATION_VERIFICATION` and fails the
    /// handshake; a report-only pin failure lets it proceed. Peer verification must be on (`SSL_VERIFY_PEER`)
    /// and, for libcurl, `CURLOPT_SSL_VERIFYPEER` 1 and the session cache off (resumed sessions skip the callback).
    /// - Throws: ``SecurityError`` `openSSLFailure` when OpenSSL cannot ask for the staple.
    static func prepareContext(_ sslContext: OpaquePointer) throws(SecurityError) {
        SSL_CTX_set_options(sslContext, pinpath_SSL_OP_NO_RENEGOTIATION())
        guard pinpath_SSL_CTX_limit_dh_groups(sslContext) == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot bound the Diffie-Hellman groups of the TLS context")
        }
        // libcurl installs a key-log callback when SSLKEYLOGFILE is set, writing every session's secrets to that
        // file, where a packet capture turns into the requests' headers: pinpath's connections write none.
        SSL_CTX_set_keylog_callback(sslContext, nil)
        // Always asked for, so that a must-staple leaf is held to its promise whatever the policy's mode. OpenSSL
        // calls the status callback after the certificate verify callback (TLS 1.2 sends the CertificateStatus
        // message after the Certificate; TLS 1.3 carries it in the Certificate's extensions but the callback
        // still runs once the chain is verified), and a 0 fails the handshake before any request byte.
        guard pinpath_SSL_CTX_request_ocsp_staple(sslContext) == 1,
            pinpath_SSL_CTX_set_tlsext_status_cb(
                sslContext,
                { ssl, _ in
                    guard let ssl, let verifier = HandshakeVerifier.serving(ssl) else { return 0 }
                    return verifier.checkStaple(ssl) ? 1 : 0
                }) == 1
        else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot ask for the server's OCSP staple")
        }
        // No argument: the verifier is the connection's, found from the `SSL` the store context verifies for.
        SSL_CTX_set_cert_verify_callback(
            sslContext,
            { storeContext, _ in
                guard let storeContext else { return 0 }
                guard let ssl = X509_STORE_CTX_get_ex_data(storeContext, SSL_get_ex_data_X509_STORE_CTX_idx()),
                    let verifier = HandshakeVerifier.serving(OpaquePointer(ssl))
                else {
                    // A connection nobody installed a verifier on is refused: fail closed.
                    X509_STORE_CTX_set_error(storeContext, X509_V_ERR_APPLICATION_VERIFICATION)
                    return 0
                }
                return verifier.verify(storeContext) ? 1 : 0
            }, nil)
    }

    /// The verifier that judges this connection's handshake: the one installed on the `SSL`, else the one
    /// installed on its `SSL_CTX` (as `SSL_get_SSL_CTX` returns it), else `nil`. Whether it accepted the
    /// connection is ``accepted(_:)``'s answer.
    static func serving(_ ssl: OpaquePointer) -> HandshakeVerifier? {
        if let slot = installedSlot, let pointer = SSL_get_ex_data(ssl, slot) {
            return Unmanaged<HandshakeVerifier>.fromOpaque(pointer).takeUnretainedValue()
        }
        guard let slot = contextSlot, let context = SSL_get_SSL_CTX(ssl), let pointer = SSL_CTX_get_ex_data(context, slot) else {
            return nil
        }
        return Unmanaged<HandshakeVerifier>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The verifier whose evaluation accepted the handshake of this connection (an OpenSSL `SSL*`, as libcurl's
    /// `CURLINFO_TLS_SSL_PTR` gives it), or `nil` when none did: no handshake yet, one that failed, a resumed
    /// session (which skips the verification callback), or TLS that was never started on it. A verifier
    /// installed on the connection's context is not enough: this says that it ran on this very connection and
    /// let it through. Wraps `SSL_get_ex_data`.
    package static func accepted(_ ssl: OpaquePointer) -> HandshakeVerifier? {
        guard let slot = acceptedSlot, let pointer = SSL_get_ex_data(ssl, slot) else { return nil }
        // Unretained: the verifier is owned by the connection (``install(onConnection:)``) or by its context
        // (``install(on:)``), which the `SSL` holds, so it outlives every `SSL` it marked.
        return Unmanaged<HandshakeVerifier>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The `SSL` ex_data index where the verifier that accepted a connection's handshake marks it (``accepted(_:)``).
    private static let acceptedSlot: Int32? = {
        let slot = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)
        return slot >= 0 ? slot : nil
    }()

    /// Marks the connection whose handshake `storeContext` verifies as accepted by this verifier, or clears
    /// the mark. Wraps `SSL_get_ex_data_X509_STORE_CTX_idx` and `SSL_set_ex_data`.
    private func mark(_ storeContext: OpaquePointer, accepted: Bool) {
        guard let slot = Self.acceptedSlot,
            let ssl = X509_STORE_CTX_get_ex_data(storeContext, SSL_get_ex_data_X509_STORE_CTX_idx())
        else { return }
        mark(OpaquePointer(ssl), slot: slot, accepted: accepted)
    }

    private func mark(_ ssl: OpaquePointer, slot: Int32, accepted: Bool) {
        _ = SSL_set_ex_data(ssl, slot, accepted ? Unmanaged.passUnretained(self).toOpaque() : nil)
    }

    /// The `SSL_CTX` ex_data index holding a verifier installed on a context; OpenSSL calls the free callback,
    /// which drops the context's reference, when the context is freed. Registered once per process.
    private static let contextSlot: Int32? = {
        let slot = CRYPTO_get_ex_new_index(
            CRYPTO_EX_INDEX_SSL_CTX, 0, nil, nil, nil,
            { _, pointer, _, _, _, _ in
                guard let pointer else { return }  // called for every context, with or without a verifier
                Unmanaged<HandshakeVerifier>.fromOpaque(pointer).release()
            })
        return slot >= 0 ? slot : nil
    }()

    /// The `SSL` ex_data index holding a verifier installed on a connection; the free callback drops the
    /// connection's reference when the `SSL` is freed. Registered once per process.
    private static let installedSlot: Int32? = {
        let slot = CRYPTO_get_ex_new_index(
            CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil,
            { _, pointer, _, _, _, _ in
                guard let pointer else { return }  // called for every connection, libcurl's too
                Unmanaged<HandshakeVerifier>.fromOpaque(pointer).release()
            })
        return slot >= 0 ? slot : nil
    }()

    /// Evaluates the chain in OpenSSL's verification context and records the result.
    private func verify(_ storeContext: OpaquePointer) -> Bool {
        let result: Result<TrustEvaluation, SecurityError>
        do {
            result = .success(
                try policy.evaluate(
                    servedChain: Self.servedChain(storeContext), host: host, port: port, trustStore: trustStore,
                    verificationTime: verificationTime))
        } catch let error as SecurityError {
            result = .failure(error)
        } catch {
            result = .failure(SecurityError(.openSSLFailure, "\(host): \(error)"))
        }
        last.withLock { $0 = result }
        let version = X509_STORE_CTX_get_ex_data(storeContext, SSL_get_ex_data_X509_STORE_CTX_idx()).map {
            String(cString: SSL_get_version(OpaquePointer($0)))
        }
        lastVersion.withLock { $0 = version }
        evaluations.add(1, ordering: .relaxed)
        guard case .success(let evaluation) = result, evaluation.allowsConnection else {
            mark(storeContext, accepted: false)
            X509_STORE_CTX_set_error(storeContext, X509_V_ERR_APPLICATION_VERIFICATION)
            return false
        }
        mark(storeContext, accepted: true)
        X509_STORE_CTX_set_error(storeContext, X509_V_OK)
        return true
    }

    /// Judges the connection's stapled OCSP response under the policy's revocation mode, on the chain the verify
    /// callback accepted, and records the staple (and a refusal) in the last result. Wraps
    /// `SSL_get_tlsext_status_ocsp_resp`.
    private func checkStaple(_ ssl: OpaquePointer) -> Bool {
        guard case .success(let evaluation)? = lastResult, evaluation.allowsConnection else { return false }
        var bytes: UnsafePointer<UInt8>?
        let length = pinpath_SSL_get_tlsext_status_ocsp_resp(ssl, &bytes)
        let response = length > 0 ? bytes.map { Array(UnsafeBufferPointer(start: $0, count: length)) } : nil
        let updated = evaluation.applyingStaple(response, now: verificationTime ?? Date(), responses: ocspResponses)
        last.withLock { $0 = .success(updated) }
        if !updated.allowsConnection, let slot = Self.acceptedSlot { mark(ssl, slot: slot, accepted: false) }
        return updated.allowsConnection
    }

    /// The certificates the peer sent: OpenSSL's handshake puts the leaf in the context and the whole sent
    /// list (leaf included) in its untrusted stack.
    private static func servedChain(_ storeContext: OpaquePointer) -> [Certificate] {
        guard let leafPointer = X509_STORE_CTX_get0_cert(storeContext), let leaf = Certificate(referencing: leafPointer)
        else { return [] }
        var chain = [leaf]
        if let untrusted = X509_STORE_CTX_get0_untrusted(storeContext) {
            for index in 0..<pinpath_sk_X509_num(untrusted) {
                guard let pointer = pinpath_sk_X509_value(untrusted, index), let certificate = Certificate(referencing: pointer)
                else { continue }
                if index == 0 && certificate == leaf { continue }
                chain.append(certificate)
            }
        }
        return chain
    }
}
