import COpenSSL
import COpenSSLShims
import PinpathSupport

/// The TLS side of a server pinpath runs itself (the metrics listener's `metrics.tls`): a certificate chain and
/// its key, read and checked when the configuration loads, an optional CA that clients' certificates must chain
/// to (mutual TLS), and the lowest TLS version accepted.
///
/// Owns one `SSL_CTX`. `@unchecked Sendable`: the context is only read once built, and OpenSSL allows `SSL_new`
/// on one context from many threads.
package final class TLSServerContext: @unchecked Sendable {
    /// The lowest protocol version a client may use.
    package enum MinimumVersion: String, Sendable, CaseIterable {
        case tls12 = "TLS12"
        case tls13 = "TLS13"

        var openSSLVersion: Int32 { self == .tls12 ? TLS1_2_VERSION : TLS1_3_VERSION }
    }

    let context: OpaquePointer
    /// Whether every client must present a certificate that chains to the client CA.
    package let requiresClientCertificate: Bool

    /// Reads and checks the files, and builds the context.
    /// - Parameters:
    ///   - certificatePath: the server's certificate (PEM), then any intermediates it sends.
    ///   - keyPath: its private key (PEM), not encrypted: the agent starts unattended.
    ///   - clientCAPath: CA certificates (PEM) a client's certificate must chain to; `nil` asks for none.
    ///   - minimumVersion: the lowest version accepted.
    /// - Throws: ``SecurityError``: `unreadableFile` or `invalidInput` for the certificate, `unusableServerKey`
    ///   for the key (unreadable, no PEM key, encrypted, not the certificate's), `unusableClientCA` for the CA file.
    package init(
        certificatePath: String, keyPath: String, clientCAPath: String?, minimumVersion: MinimumVersion = .tls12
    ) throws(SecurityError) {
        _ = drainOpenSSLErrors()
        let certificates = try Self.certificates(certificatePath, code: nil)
        defer { for certificate in certificates { X509_free(certificate) } }
        let keyBytes: [UInt8]
        do {
            keyBytes = try readRegularFile(keyPath)
        } catch {
            throw SecurityError(.unusableServerKey, "cannot read the private key: \(error)")
        }
        let key = keyBytes.withUnsafeBytes { buffer -> OpaquePointer? in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            // A callback that gives no password: without one OpenSSL would ask on the terminal.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else {
            _ = drainOpenSSLErrors()
            let encrypted = keyBytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.contains("ENCRYPTED")
            throw SecurityError(
                .unusableServerKey,
                encrypted
                    ? "\(keyPath): the private key is encrypted; the agent starts unattended and needs it unencrypted (readable by its user only)"
                    : "\(keyPath) holds no PEM private key")
        }
        defer { EVP_PKEY_free(key) }
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw SecurityError.openSSL(.openSSLFailure, "cannot create a TLS context")
        }
        self.context = context
        requiresClientCertificate = clientCAPath != nil
        // From here `deinit` frees the context on a throw.
        SSL_CTX_set_options(context, pinpath_SSL_OP_NO_RENEGOTIATION())
        _ = pinpath_SSL_CTX_set_min_proto_version(context, minimumVersion.openSSLVersion)
        guard SSL_CTX_use_certificate(context, certificates[0]) == 1,
            certificates.dropFirst().allSatisfy({ pinpath_SSL_CTX_add1_chain_cert(context, $0) == 1 })
        else {
            throw SecurityError.openSSL(.invalidInput, "\(certificatePath): the certificate cannot be used")
        }
        guard SSL_CTX_use_PrivateKey(context, key) == 1, SSL_CTX_check_private_key(context) == 1 else {
            _ = drainOpenSSLErrors()
            throw SecurityError(.unusableServerKey, "\(keyPath): the private key does not belong to the certificate in \(certificatePath)")
        }
        if let clientCAPath {
            let authorities = try Self.certificates(clientCAPath, code: .unusableClientCA)
            defer { for authority in authorities { X509_free(authority) } }
            let store = SSL_CTX_get_cert_store(context)
            guard let names = pinpath_sk_X509_NAME_new_null() else {
                throw SecurityError.openSSL(.openSSLFailure, "cannot build the client CA list")
            }
            for authority in authorities {
                guard X509_STORE_add_cert(store, authority) == 1 else {
                    throw SecurityError.openSSL(.unusableClientCA, "\(clientCAPath): a certificate cannot be added")
                }
                // The names the server lists in its CertificateRequest: clients pick their certificate by them.
                _ = pinpath_sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(authority)))
            }
            SSL_CTX_set_client_CA_list(context, names)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        _ = drainOpenSSLErrors()
    }

    deinit { SSL_CTX_free(context) }

    /// Every PEM certificate in `path`, in order; at least one.
    private static func certificates(_ path: String, code: SecurityError.Code?) throws(SecurityError) -> [OpaquePointer] {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path)
        } catch {
            throw SecurityError(code ?? .unreadableFile, "cannot read the certificates: \(error)")
        }
        let certificates = bytes.withUnsafeBytes { buffer -> [OpaquePointer] in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            var found: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { found.append(certificate) }
            return found
        }
        _ = drainOpenSSLErrors()  // the end of the file reads as an error
        guard !certificates.isEmpty else { throw SecurityError(code ?? .invalidInput, "\(path) holds no PEM certificate") }
        return certificates
    }
}
