import COpenSSL
import PinpathSupport

/// A client certificate and its private key for mutual TLS, checked when they are configured rather than in
/// the first handshake: both files regular files of readable PEM (a FIFO, device or directory is refused
/// unread, so that a pipe no one closes cannot hang a check), the key decrypted with its password (or not
/// encrypted when there is none), and the key the certificate's.
public enum ClientIdentity {
    /// Checks a client certificate and key.
    /// - Parameters:
    ///   - certificatePath: the certificate (PEM); the key may follow it in the same file.
    ///   - keyPath: the private key (PEM); `nil` reads it from `certificatePath`.
    ///   - password: the key's password, if it is encrypted. Never part of a message.
    /// - Throws: ``SecurityError`` `unreadableFile` or `invalidInput` for the certificate (unreadable or not a
    ///   regular file, no PEM certificate); `unusableClientKey` for the key (its file unreadable or not a regular
    ///   file, no PEM key, encrypted with no or a wrong password, not the certificate's key), also when it is
    ///   read from `certificatePath`.
    public static func check(certificatePath: String, keyPath: String?, password: String?) throws(SecurityError) {
        _ = try load(certificatePath: certificatePath, keyPath: keyPath, password: password)
    }

    /// Reads and checks a client certificate and key as ``check(certificatePath:keyPath:password:)`` does, and
    /// returns them parsed: the certificate, the chain certificates that follow it in its file, and the key.
    static func load(certificatePath: String, keyPath: String?, password: String?) throws(SecurityError) -> LoadedClientIdentity {
        let certificateBytes = try read(certificatePath, "client certificate")
        let keyFile = keyPath ?? certificatePath
        let keyBytes = keyPath == nil ? certificateBytes : try read(keyFile, "client key", code: .unusableClientKey)
        let certificates = certificateBytes.withUnsafeBytes { buffer -> [OpaquePointer] in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            var certificates: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) { certificates.append(certificate) }
            return certificates
        }
        _ = drainOpenSSLErrors()  // the read past the last certificate queues "no start line"
        guard let certificate = certificates.first else {
            throw SecurityError.openSSL(.invalidInput, "\(certificatePath) holds no PEM certificate")
        }
        let key = keyBytes.withUnsafeBytes { buffer -> OpaquePointer? in
            let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
            defer { BIO_free(bio) }
            guard let password else {
                // A callback that gives no password: without one OpenSSL would ask on the terminal.
                return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            }
            // With no callback, OpenSSL reads the last argument as the password (a C string).
            return password.withCString { PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: $0)) }
        }
        let identity = LoadedClientIdentity(certificates: certificates, key: key)
        guard let key else {
            let encrypted = keyBytes.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }.contains("ENCRYPTED")
            _ = drainOpenSSLErrors()  // its reasons may echo nothing secret, but say less than this
            if encrypted {
                throw SecurityError(
                    .unusableClientKey,
                    password == nil
                        ? "\(keyFile): the private key is encrypted and no password was given"
                        : "\(keyFile): the private key cannot be decrypted with the password given")
            }
            throw SecurityError(.unusableClientKey, "\(keyFile) holds no PEM private key")
        }
        guard X509_check_private_key(certificate, key) == 1 else {
            _ = drainOpenSSLErrors()
            throw SecurityError(
                .unusableClientKey, "\(keyFile): the private key does not belong to the certificate in \(certificatePath)")
        }
        return identity
    }

    private static func read(_ path: String, _ what: String, code: SecurityError.Code = .unreadableFile) throws(SecurityError)
        -> [UInt8]
    {
        do {
            // A regular file only: a FIFO with a writer that never closes would block the read for ever.
            return try readRegularFile(path)
        } catch {
            throw unreadable(path, what, code: code, error)
        }
    }

    /// The error for a client certificate or key file that cannot be read (`cannot read the client key PATH: …`).
    static func unreadable(_ path: String, _ what: String, code: SecurityError.Code, _ error: some Error) -> SecurityError {
        SecurityError(code, "cannot read the \(what) \(path): \(error)")
    }
}
