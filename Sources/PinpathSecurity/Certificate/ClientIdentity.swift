import COpenSSL
import PinpathSupport

/// A client certificate and its private key for mutual TLS, checked when they are configured rather than in
/// the first handshake: both files readable PEM, the key decrypted with its password (or not encrypted when
/// there is none), and the key the certificate's.
public enum ClientIdentity {
    /// Checks a client certificate and key.
    /// - Parameters:
    ///   - certificatePath: the certificate (PEM); the key may follow it in the same file.
    ///   - keyPath: the private key (PEM); `nil` reads it from `certificatePath`.
    ///   - password: the key's password, if it is encrypted. Never part of a message.
    /// - Throws: ``SecurityError`` `unreadableFile` or `invalidInput` for the certificate (unreadable, no PEM
    ///   certificate); `unusableClientKey` for the key (its file unreadable, no PEM key, encrypted with no or a
    ///   wrong password, not the certificate's key), also when it is read from `certificatePath`.
    public static func check(certificatePath: String, keyPath: String?, password: String?) throws(SecurityError) {
        let certificateBytes = try read(certificatePath, "client certificate")
        let keyFile = keyPath ?? certificatePath
        let keyBytes = keyPath == nil ? certificateBytes : try read(keyFile, "client key", code: .unusableClientKey)
        guard
            let certificate = certificateBytes.withUnsafeBytes({ buffer -> OpaquePointer? in
                let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count))
                defer { BIO_free(bio) }
                return PEM_read_bio_X509(bio, nil, nil, nil)
            })
        else {
            throw SecurityError.openSSL(.invalidInput, "\(certificatePath) holds no PEM certificate")
        }
        defer { X509_free(certificate) }
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
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(certificate, key) == 1 else {
            _ = drainOpenSSLErrors()
            throw SecurityError(
                .unusableClientKey, "\(keyFile): the private key does not belong to the certificate in \(certificatePath)")
        }
    }

    private static func read(_ path: String, _ what: String, code: SecurityError.Code = .unreadableFile) throws(SecurityError)
        -> [UInt8]
    {
        do {
            return try readWholeFile(path)
        } catch {
            throw SecurityError(code, "cannot read the \(what) \(path): \(error)")
        }
    }
}
