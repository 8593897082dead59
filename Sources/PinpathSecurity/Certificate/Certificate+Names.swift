import COpenSSL
import COpenSSLShims

extension Certificate {
    /// The subject alternative name extension, or `nil` when the certificate has none. Wraps
    /// `X509_get_ext_d2i` with `NID_subject_alt_name`.
    var subjectAlternativeNameExtension: CertificateExtension<[GeneralName]>? {
        decodedExtension(NID_subject_alt_name) { raw in
            let names = OpaquePointer(raw)
            defer { GENERAL_NAMES_free(names) }
            return (0..<pinpath_sk_GENERAL_NAME_num(names)).compactMap { index in
                pinpath_sk_GENERAL_NAME_value(names, index).map { Self.generalName($0.pointee) }
            }
        }
    }

    /// The name constraints extension, or `nil` when the certificate has none. Wraps `X509_get_ext_d2i` with
    /// `NID_name_constraints`, and `OPENSSL_sk_num`/`OPENSSL_sk_value` on its GENERAL_SUBTREE stacks (plain
    /// functions, so no shim is needed).
    var nameConstraintsExtension: CertificateExtension<NameConstraints>? {
        decodedExtension(NID_name_constraints) { raw in
            let constraints = raw.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
            defer { NAME_CONSTRAINTS_free(constraints) }
            func subtrees(_ stack: OpaquePointer?) -> [GeneralName]? {
                guard let stack else { return nil }
                return (0..<OPENSSL_sk_num(stack)).compactMap { index in
                    let subtree = OPENSSL_sk_value(stack, index)?.assumingMemoryBound(to: GENERAL_SUBTREE.self)
                    return subtree?.pointee.base.map { Self.generalName($0.pointee) }
                }
            }
            return NameConstraints(
                permitted: subtrees(constraints.pointee.permittedSubtrees),
                excluded: subtrees(constraints.pointee.excludedSubtrees))
        }
    }

    /// The subject's commonName values as UTF-8 bytes, in order (a name may hold several). Wraps
    /// `X509_NAME_get_index_by_NID` and `ASN1_STRING_to_UTF8`; a value OpenSSL cannot convert is left out.
    var commonNames: [[UInt8]] {
        guard let name = X509_get_subject_name(x509) else { return [] }
        var values: [[UInt8]] = []
        var index: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, NID_commonName, index)
            guard index >= 0 else { break }
            guard let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
                continue
            }
            var utf8: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&utf8, data)
            guard length >= 0, let utf8 else {
                _ = drainOpenSSLErrors()
                continue
            }
            values.append(Array(UnsafeBufferPointer(start: utf8, count: Int(length))))
            CRYPTO_free(utf8, #file, #line)
        }
        return values
    }

    /// Whether the subject is an empty sequence. Wraps `X509_NAME_entry_count`.
    var hasEmptySubject: Bool { X509_NAME_entry_count(X509_get_subject_name(x509)) == 0 }

    /// The extension `nid`, decoded by `decode` (which owns and frees OpenSSL's structure); `nil` when absent.
    /// A repeated extension counts as undecodable.
    private func decodedExtension<Value>(
        _ nid: Int32, _ decode: (UnsafeMutableRawPointer) -> Value
    ) -> CertificateExtension<Value>? {
        let index = X509_get_ext_by_NID(x509, nid, -1)
        guard index >= 0, let found = X509_get_ext(x509, index) else { return nil }
        let critical = X509_EXTENSION_get_critical(found) != 0
        var status: Int32 = 0
        guard let raw = X509_get_ext_d2i(x509, nid, &status, nil) else {
            _ = drainOpenSSLErrors()  // the reason is "cannot decode", which the rule says in its own words
            return CertificateExtension(value: nil, critical: critical)
        }
        return CertificateExtension(value: decode(raw), critical: critical)
    }

    private static func generalName(_ name: GENERAL_NAME) -> GeneralName {
        switch name.type {
        case GEN_DNS: return .dns(bytes(name.d.dNSName))
        case GEN_IPADD: return .ipAddress(bytes(name.d.iPAddress))
        case GEN_EMAIL: return .email(bytes(name.d.rfc822Name))
        case GEN_URI: return .uri(bytes(name.d.uniformResourceIdentifier))
        default: return .other
        }
    }

    private static func bytes(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> [UInt8] {
        guard let string, let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }
}
