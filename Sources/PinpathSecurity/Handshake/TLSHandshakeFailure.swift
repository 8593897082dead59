import PinpathSupport

/// Why a ``TLSClientHandshake`` did not complete, for its caller to map onto its own errors. The texts are
/// OpenSSL's and the kernel's, escaped for display (``UntrustedText``).
package struct TLSHandshakeFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure, as an extensible set of values.
    package struct Code: ErrorCode {
        package let name: String
        /// The connection's ``HandshakeVerifier`` refused the server's chain or its OCSP staple: its
        /// ``HandshakeVerifier/lastResult`` says why.
        package static let verifierRefused = Code(name: "verifier_refused")
        /// The server asked for a client certificate and then ended the handshake with an alert (it refused
        /// the certificate sent, or the lack of one), or OpenSSL could not use the certificate configured.
        package static let clientCertificate = Code(name: "client_certificate")
        /// The server closed the connection during the handshake without an alert (not a TLS port, or a
        /// server that drops clients it does not like).
        package static let connectionClosed = Code(name: "connection_closed")
        /// The socket failed under the handshake (`ECONNRESET`): ``TLSHandshakeFailure/socketError``.
        package static let socketFailure = Code(name: "socket_failure")
        /// Anything else OpenSSL refused: an alert from the server, an answer that is not TLS, no common
        /// version or cipher.
        package static let protocolFailure = Code(name: "protocol_failure")
    }

    /// What kind of failure.
    package let code: Code
    /// What went wrong, as a clause without the host (`the server ended TLS with an alert: error:0A000410:SSL
    /// routines::sslv3 alert handshake failure`), for a caller that names the request itself.
    package let reason: String
    /// OpenSSL's error lines for the failure, as libcurl quotes them (`error:0A00010B:SSL routines::wrong
    /// version number`), escaped; empty when OpenSSL queued none.
    package let openSSLErrors: [String]
    /// The same errors' reasons alone (`wrong version number`), escaped, as an audit's messages quote them.
    package let openSSLReasons: [String]
    /// The `errno` of the socket's failure (``Code/socketFailure``), or 0.
    package let socketError: Int32
    /// The host and port the handshake was for (the verifier's), for ``description``.
    package let endpoint: String

    /// `valid.test:443: <reason>`.
    package var description: String { "\(endpoint): \(reason)" }
}

/// What a completed ``TLSClientHandshake`` negotiated.
package struct NegotiatedTLS: Sendable, Equatable {
    /// The protocol version, as OpenSSL names it (`TLSv1.3`). From `SSL_get_version`.
    package let version: String
    /// The cipher suite, by OpenSSL's name (`TLS_AES_256_GCM_SHA384`). From `SSL_CIPHER_get_name`.
    package let cipher: String
}
