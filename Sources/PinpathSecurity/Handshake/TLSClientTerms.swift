/// What a shared client `SSL_CTX` depends on: the contexts of ``TLSClientContexts`` are one per distinct terms.
///
/// Only the client certificate today. Not the trust store or the policy: verification is pinpath's own
/// callback, which brings them with each connection's ``HandshakeVerifier``. Not a minimum TLS version or a
/// cipher list: no policy sets one, and the contexts keep OpenSSL's defaults as libcurl 7.88 does (Debian's
/// build: security level 2, at which OpenSSL 3.0 completes no TLS 1.0 or 1.1 handshake: their MD5-SHA1
/// signatures fail as `legacy sigalg disallowed or unsupported`, for curl and for pinpath alike). A setting
/// added later that changes the context belongs here, so that equal terms keep meaning one context.
package struct TLSClientTerms: Hashable, Sendable, CustomStringConvertible {
    /// The certificate and key sent when a server asks for one; `nil` sends none.
    package var clientCertificate: ClientCertificateFiles?

    package init(clientCertificate: ClientCertificateFiles? = nil) {
        self.clientCertificate = clientCertificate
    }

    /// `no client certificate` or `client certificate client.pem, key client.key` (never the password).
    package var description: String { clientCertificate.map { "client certificate \($0)" } ?? "no client certificate" }
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
