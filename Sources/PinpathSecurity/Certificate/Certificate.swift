import COpenSSL
import COpenSSLShims

/// One X.509 certificate. Owns an OpenSSL `X509` reference and releases it when deallocated.
///
/// `@unchecked Sendable` because the certificate is never mutated after parsing, and OpenSSL 3 guards the
/// lazily cached extension data of an `X509` with its own lock, so concurrent reads are safe.
public final class Certificate: @unchecked Sendable, Hashable, CustomStringConvertible {
    let x509: OpaquePointer

    /// Takes ownership of one reference to `x509`.
    init(owning x509: OpaquePointer) {
        self.x509 = x509
    }

    /// Takes a new reference to a certificate owned by someone else (a chain, a verification context).
    convenience init?(referencing x509: OpaquePointer) {
        guard X509_up_ref(x509) == 1 else { return nil }
        self.init(owning: x509)
    }

    /// Parses one DER-encoded certificate. Wraps `d2i_X509`.
    /// - Throws: ``SecurityError`` with code `invalidInput` when the bytes are not exactly one certificate.
    public convenience init(derBytes: [UInt8]) throws {
        guard let x509 = derDecoding(derBytes, { d2i_X509(nil, $0, $1) }, free: { X509_free($0) }) else {
            throw SecurityError.openSSL(.invalidInput, "the \(derBytes.count) bytes are not a DER certificate")
        }
        self.init(owning: x509)
    }

    /// Parses every certificate in PEM text (a bundle, in order).
    /// - Throws: ``SecurityError`` with code `invalidInput` when a block is damaged or there is no certificate.
    public static func certificates(pem: String, source: String = "PEM input") throws -> [Certificate] {
        try KeyMaterial.load(bytes: Array(pem.utf8), source: source).compactMap(\.certificate)
    }

    /// Loads every certificate of a PEM bundle or a DER file.
    /// - Throws: ``SecurityError`` naming `path` (unreadable, not a certificate).
    public static func certificates(contentsOf path: String) throws -> [Certificate] {
        let found = try KeyMaterial.load(contentsOf: path).compactMap(\.certificate)
        guard !found.isEmpty else {
            throw SecurityError(.invalidInput, "\(path): no certificate found (it holds only keys or CSRs)")
        }
        return found
    }

    deinit { X509_free(x509) }

    /// The pin of this certificate's SubjectPublicKeyInfo, hashed as encoded in the certificate.
    public var spkiPin: SPKIPin {
        // X509_get_X509_PUBKEY cannot fail for a parsed certificate, and i2d of a parsed key only fails on
        // allocation; the empty digest that would follow matches no pin, which is the safe outcome.
        let der = derEncoding { i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x509), $0) } ?? []
        return SPKIPin(subjectPublicKeyInfo: der)
    }

    /// The subject in RFC 2253 form (`CN=leaf,O=Example`), as OkHttp prints it in pin failures.
    public var subject: String { Self.name(X509_get_subject_name(x509)) }

    /// The issuer in RFC 2253 form.
    public var issuer: String { Self.name(X509_get_issuer_name(x509)) }

    /// The DER encoding. Wraps `i2d_X509`.
    public var derBytes: [UInt8] { derEncoding { i2d_X509(x509, $0) } ?? [] }

    /// The PEM encoding (`-----BEGIN CERTIFICATE-----` …), as RFC 7469 reports carry chains.
    public var pem: String { writingToMemoryBIO { PEM_write_bio_X509($0, x509) == 1 } ?? "" }

    /// The subject, for logs.
    public var description: String { subject }

    /// Certificates are equal when their DER encodings are. Wraps `X509_cmp`.
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { X509_cmp(lhs.x509, rhs.x509) == 0 }

    /// Hashes the DER encoding, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }

    /// A distinguished name in RFC 2253 form (`CN=Pinpath Test Root`). Wraps `X509_NAME_print_ex`.
    static func name(_ name: OpaquePointer?) -> String {
        guard let name else { return "" }
        return writingToMemoryBIO { X509_NAME_print_ex($0, name, 0, pinpath_XN_FLAG_RFC2253()) >= 0 } ?? ""
    }
}
