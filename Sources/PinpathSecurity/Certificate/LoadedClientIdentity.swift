import COpenSSL

/// A client certificate, the chain certificates after it in its file, and its private key, parsed by
/// ``ClientIdentity/load(certificatePath:keyPath:password:)``: the owner of the OpenSSL objects, which it frees
/// in `deinit`. Not `Sendable`: made, used and dropped by one builder.
final class LoadedClientIdentity {
    /// `X509*`, the certificate first, then its chain as the file lists it.
    let certificates: [OpaquePointer]
    /// The `EVP_PKEY*`, or `nil` while loading fails.
    let key: OpaquePointer?

    init(certificates: [OpaquePointer], key: OpaquePointer?) {
        self.certificates = certificates
        self.key = key
    }

    deinit {
        for certificate in certificates { X509_free(certificate) }
        if let key { EVP_PKEY_free(key) }
    }
}
