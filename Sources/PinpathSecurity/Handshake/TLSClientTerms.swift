/// What a shared client `SSL_CTX` depends on: the contexts of ``TLSClientContexts`` are one per distinct terms.
///
/// What the context is for and the client certificate. Not the trust store or the policy: verification is
/// pinpath's own callback, which brings them with each connection's ``HandshakeVerifier``, or the audit's
/// judgement after the handshake. Not a minimum TLS version or a
/// cipher list: no policy sets one, and the contexts keep OpenSSL's defaults as libcurl 7.88 does (Debian's
/// build: security level 2, at which OpenSSL 3.0 completes no TLS 1.0 or 1.1 handshake: their MD5-SHA1
/// signatures fail as `legacy sigalg disallowed or unsupported`, for curl and for pinpath alike). A setting
/// added later that changes the context belongs here, so that equal terms keep meaning one context.
package struct TLSClientTerms: Hashable, Sendable, CustomStringConvertible {
    /// How a context's handshakes are judged.
    package enum Purpose: Hashable, Sendable {
        /// In the handshake, by each connection's ``HandshakeVerifier`` (checks, ``TLSClientHandshake``).
        case check
        /// After it: the context verifies nothing (`SSL_VERIFY_NONE`) and accepts any key size or signature
        /// (security level 0), so that an audit (``TLSConnection``) sees any chain, even an invalid one, and
        /// judges it afterwards with ``SecurityPolicy`` at the usual level. Never for a check:
        /// ``TLSClientHandshake`` refuses such a context.
        case audit
    }

    /// How the context's handshakes are judged.
    package var purpose: Purpose
    /// The certificate and key sent when a server asks for one; `nil` sends none.
    package var clientCertificate: ClientCertificateFiles?

    package init(purpose: Purpose = .check, clientCertificate: ClientCertificateFiles? = nil) {
        self.purpose = purpose
        self.clientCertificate = clientCertificate
    }

    /// `no client certificate` or `client certificate client.pem, key client.key` (never the password), after
    /// `audit, ` for an audit's context.
    package var description: String {
        (purpose == .audit ? "audit, " : "")
            + (clientCertificate.map { "client certificate \($0)" } ?? "no client certificate")
    }
}

/// A client certificate and its private key by their files, as libcurl takes them (`CURLOPT_SSLCERT`,
/// `CURLOPT_SSLKEY`, `CURLOPT_KEYPASSWD`). Its text never shows the password.
package struct ClientCertificateFiles: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The certificate (PEM), its chain after it.
    package var certificatePath: String
    /// The private key (PEM); `nil` when it is in the certificate's file.
    package var keyPath: String?
    /// The key's password, if it is encrypted.
    package var password: String?

    package init(certificatePath: String, keyPath: String? = nil, password: String? = nil) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        self.password = password
    }

    /// `client.pem, key client.key` (the key's file when it has its own), with `(password given)` if there is one.
    package var description: String {
        certificatePath + (keyPath.map { ", key \($0)" } ?? "") + (password == nil ? "" : " (password given)")
    }

    package var debugDescription: String { description }
}
