import COpenSSL
import COpenSSLShims

/// One X.509 certificate revocation list (RFC 5280 §5), as a CA publishes it. Owns an OpenSSL `X509_CRL`
/// reference and releases it when deallocated.
///
/// `@unchecked Sendable` because the list is never mutated after parsing, and OpenSSL 3 caches a CRL's
/// extension data under its own lock, so concurrent verifications may read it.
public final class CertificateRevocationList: @unchecked Sendable, Hashable, CustomStringConvertible {
    let crl: OpaquePointer
    /// The DER encoding. Kept, because policies holding CRLs are compared on every pooled request.
    public let derBytes: [UInt8]

    private init(owning crl: OpaquePointer) {
        self.crl = crl
        derBytes = derEncoding { i2d_X509_CRL(crl, $0) } ?? []
    }

    deinit { X509_CRL_free(crl) }

    /// Parses one DER-encoded CRL. Wraps `d2i_X509_CRL`.
    /// - Throws: ``SecurityError`` with code `invalidInput` when the bytes are not exactly one CRL, or the CRL
    ///   has no nextUpdate or no CRLNumber.
    public convenience init(derBytes: [UInt8]) throws {
        guard let crl = derDecoding(derBytes, { d2i_X509_CRL(nil, $0, $1) }, free: { X509_CRL_free($0) }) else {
            _ = drainOpenSSLErrors()
            throw SecurityError(.invalidInput, "the \(derBytes.count) bytes are not a DER certificate revocation list")
        }
        self.init(owning: crl)
        try requireMandatoryFields(source: "the DER certificate revocation list")
    }

    /// Refuses a list without what RFC 5280 requires of every CRL and OpenSSL does not check:
    /// - nextUpdate (§5.1.2.5): OpenSSL treats a CRL without one as never stale, so a revocation list from years
    ///   ago would still clear a certificate revoked since;
    /// - the CRLNumber extension (§5.2.3, "conforming CRL issuers MUST include"): without it a list cannot be
    ///   ordered against its successors, and its absence marks a list not made by a CA's CRL process.
    private func requireMandatoryFields(source: String) throws {
        if X509_CRL_get0_nextUpdate(crl) == nil {
            throw SecurityError(
                .invalidInput,
                """
                \(source) (\(description)) has no nextUpdate: RFC 5280 requires one, and without it a stale list cannot be told \
                from a current one
                """
            )
        }
        if X509_CRL_get_ext_by_NID(crl, NID_crl_number, -1) < 0 {
            throw SecurityError(
                .invalidInput,
                """
                \(source) (\(description)) has no CRLNumber extension: RFC 5280 §5.2.3 requires one in every CRL; ask its \
                issuer for a conforming list
                """
            )
        }
    }

    /// Loads every CRL of a PEM file (`-----BEGIN X509 CRL-----` blocks, in order) or the one CRL of a DER file.
    /// Wraps `PEM_read_bio_X509_CRL` and `d2i_X509_CRL`.
    /// - Throws: ``SecurityError`` naming `path`: `unreadableFile`, or `invalidInput` when a block is damaged, a
    ///   CRL lacks nextUpdate or CRLNumber, or the file holds no CRL.
    public static func lists(contentsOf path: String) throws -> [CertificateRevocationList] {
        let bytes = try readInputFile(path)
        guard bytes.starts(with: Array("-----BEGIN ".utf8)) || String(decoding: bytes, as: UTF8.self).contains("-----BEGIN ")
        else {
            guard let crl = derDecoding(bytes, { d2i_X509_CRL(nil, $0, $1) }, free: { X509_CRL_free($0) }) else {
                _ = drainOpenSSLErrors()
                throw SecurityError(.invalidInput, "\(path): not a PEM file, nor a DER certificate revocation list")
            }
            let list = CertificateRevocationList(owning: crl)
            try list.requireMandatoryFields(source: path)
            return [list]
        }
        _ = drainOpenSSLErrors()
        let bio = bytes.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32(clamping: $0.count)) }
        guard let bio else { throw SecurityError.openSSL(.openSSLFailure, "\(path): cannot allocate a BIO") }
        defer { BIO_free(bio) }
        var found: [CertificateRevocationList] = []
        while let crl = PEM_read_bio_X509_CRL(bio, nil, nil, nil) {
            found.append(CertificateRevocationList(owning: crl))
            try found[found.count - 1].requireMandatoryFields(source: "\(path): X509 CRL block \(found.count)")
        }
        // Running out of blocks reports "no start line" (other PEM blocks are skipped); anything else is damage.
        let last = ERR_peek_last_error()
        if last != 0 && ERR_GET_REASON(last) != PEM_R_NO_START_LINE {
            throw SecurityError.openSSL(.invalidInput, "\(path): X509 CRL block \(found.count + 1) is damaged")
        }
        _ = drainOpenSSLErrors()
        guard !found.isEmpty else {
            throw SecurityError(.invalidInput, "\(path): no certificate revocation list found (no X509 CRL block)")
        }
        return found
    }

    /// The issuer's name in RFC 2253 form.
    public var issuer: String {
        writingToMemoryBIO { X509_NAME_print_ex($0, X509_CRL_get_issuer(crl), 0, pinpath_XN_FLAG_RFC2253()) >= 0 } ?? ""
    }

    /// The issuer, for logs.
    public var description: String { "CRL of \(issuer)" }

    /// CRLs are equal when their DER encodings are.
    public static func == (lhs: CertificateRevocationList, rhs: CertificateRevocationList) -> Bool {
        lhs.derBytes == rhs.derBytes
    }

    /// Hashes the DER encoding, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(derBytes) }
}
