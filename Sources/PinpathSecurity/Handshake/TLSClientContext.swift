import COpenSSL
import COpenSSLShims

/// One client `SSL_CTX` shared by many handshakes (``TLSClientHandshake``), built under some
/// ``TLSClientTerms``: the owner of the context, which it frees in `deinit` (each `SSL` made from it holds a
/// reference of its own, so a handshake in progress outlives its context's removal from the cache).
///
/// Set up as libcurl 7.88 sets up its per-connection contexts, so that a check sees the same servers the same
/// way: `TLS_client_method`, OpenSSL's default versions, ciphers and security level, `SSL_OP_ALL` with
/// libcurl's exceptions, no tickets, no compression. Then as pinpath needs it: peer verification by the
/// connection's ``HandshakeVerifier`` only (``HandshakeVerifier/prepareContext(_:)``: a connection without one
/// is refused), no renegotiation, no key log, the OCSP staple asked for, and no session cache, so that every
/// handshake is a full one and every chain reaches the verifier.
///
/// An audit's context (``TLSClientTerms/Purpose/audit``) keeps OpenSSL's defaults but verifies nothing and runs at
/// security level 0, as an audit's connection did when it had a context of its own; no session cache either.
///
/// `@unchecked Sendable`: the context is only read once built (`SSL_new` takes its own reference and copies
/// what it needs), which OpenSSL allows from any thread.
package final class TLSClientContext: @unchecked Sendable {
    /// The terms it was built under.
    package let terms: TLSClientTerms
    /// The `SSL_CTX*`.
    let pointer: OpaquePointer

    /// Builds the context, loading the client certificate of `terms` if it has one.
    /// - Throws: ``SecurityError`` naming the file: `unreadableFile` or `invalidInput` for the certificate,
    ///   `unusableClientKey` for the key (see ``ClientIdentity/check(certificatePath:keyPath:password:)``), or
    ///   `openSSLFailure`.
    package init(terms: TLSClientTerms) throws(SecurityError) {
        OpenSSLRuntime.initialiseWithoutExitCleanup()
        guard let pointer = SSL_CTX_new(TLS_client_method()) else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot create a TLS client context")
        }
        self.pointer = pointer
        self.terms = terms
        // No session is ever resumed: every handshake is a full one, and a check's chain reaches its verifier (a
        // resumed handshake skips the verify callback), an audit's expiry proof a server's signature. No tickets
        // either, so that this does not rest on nothing calling SSL_set_session.
        _ = pinpath_SSL_CTX_set_session_cache_mode(pointer, Int(SSL_SESS_CACHE_OFF))
        SSL_CTX_set_options(pointer, pinpath_SSL_OP_NO_TICKET())
        switch terms.purpose {
        case .check: try setUpForChecks()
        case .audit:
            // As an audit's connection always had it: OpenSSL's defaults otherwise. The level is set before the
            // client certificate is loaded, which it would otherwise refuse for a weak key.
            SSL_CTX_set_verify(pointer, SSL_VERIFY_NONE, nil)
            SSL_CTX_set_security_level(pointer, 0)
        }
        guard pinpath_SSL_CTX_limit_dh_groups(pointer) == 1 else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot bound the Diffie-Hellman groups of a TLS client context")
        }
        if let files = terms.clientCertificate { try useClientCertificate(files) }
    }

    deinit {
        SSL_CTX_free(pointer)
    }

    /// A check's context: verified by the connection's verifier only, set up as libcurl sets up its own.
    private func setUpForChecks() throws(SecurityError) {
        // libcurl's options (lib/vtls/openssl.c, ossl_connect_step1): OpenSSL's workarounds for broken
        // servers except the one that weakens CBC against BEAST, and no compression (CRIME).
        let options =
            (pinpath_SSL_OP_ALL() | pinpath_SSL_OP_NO_COMPRESSION())
            & ~pinpath_SSL_OP_DONT_INSERT_EMPTY_FRAGMENTS()
        SSL_CTX_set_options(pointer, options)
        SSL_CTX_set_verify(pointer, SSL_VERIFY_PEER, nil)
        try HandshakeVerifier.prepareContext(pointer)
    }

    /// Loads the certificate, its chain and its key into the context, once for every handshake made from it.
    /// Read and checked by ``ClientIdentity``, so the errors are the ones a configuration check gives.
    private func useClientCertificate(_ files: ClientCertificateFiles) throws(SecurityError) {
        let identity = try ClientIdentity.load(
            certificatePath: files.certificatePath, keyPath: files.keyPath, password: files.password)
        let keyFile = files.keyPath ?? files.certificatePath
        guard let certificate = identity.certificates.first, let key = identity.key,
            SSL_CTX_use_certificate(pointer, certificate) == 1
        else {
            throw SecurityError.openSSL(.invalidInput, "\(files.certificatePath): OpenSSL cannot use the client certificate")
        }
        for chainCertificate in identity.certificates.dropFirst() {
            guard pinpath_SSL_CTX_add1_chain_cert(pointer, chainCertificate) == 1 else {
                throw SecurityError.openSSL(
                    .invalidInput, "\(files.certificatePath): OpenSSL cannot use a chain certificate after the client certificate")
            }
        }
        guard SSL_CTX_use_PrivateKey(pointer, key) == 1, SSL_CTX_check_private_key(pointer) == 1 else {
            throw SecurityError.openSSL(.unusableClientKey, "\(keyFile): OpenSSL cannot use the client certificate's private key")
        }
    }
}
