import COpenSSL

/// What the profile's certificate rules read. Most of it comes from the extension data OpenSSL decodes once per
/// certificate and caches in the `X509` (`x509v3_cache_extensions`, run by `X509_verify_cert` before the rules),
/// so that a rule reading a flag does not decode the extension again.
extension Certificate {
    /// OpenSSL's cached extension flags (`EXFLAG_CA`, `EXFLAG_SS`…). Wraps `X509_get_extension_flags`.
    var extensionFlags: UInt32 { X509_get_extension_flags(x509) }

    /// The basic constraints extension says `cA: TRUE`.
    var isCertificateAuthority: Bool { extensionFlags & UInt32(EXFLAG_CA) != 0 }

    /// Issuer and subject are the same and the authority key identifier, if any, names the certificate's own
    /// key (OpenSSL's `EXFLAG_SS`; the signature itself is not checked here).
    var isSelfSigned: Bool { extensionFlags & UInt32(EXFLAG_SS) != 0 }

    /// The signature verifies under the certificate's own key, whatever its issuer name says: a root, even one
    /// whose issuer names another CA. Wraps `X509_verify`.
    var isSignedByOwnKey: Bool {
        defer { _ = drainOpenSSLErrors() }  // a failed X509_verify queues its reason
        guard let key = X509_get0_pubkey(x509) else { return false }
        return X509_verify(x509, key) == 1
    }

    /// Issuer and subject are the same name (OpenSSL's `EXFLAG_SI`): a root, or a CA's certificate for its
    /// own new key.
    var isSelfIssued: Bool { extensionFlags & UInt32(EXFLAG_SI) != 0 }

    /// The version field: 0 for v1, 2 for v3. Wraps `X509_get_version`.
    var version: Int { X509_get_version(x509) }

    /// The extended key usages OpenSSL knows (`XKU_SSL_SERVER`, `XKU_ANYEKU`…), or `nil` without the
    /// extension. Wraps `X509_get_extended_key_usage`.
    var extendedKeyUsage: UInt32? {
        extensionFlags & UInt32(EXFLAG_XKUSAGE) != 0 ? X509_get_extended_key_usage(x509) : nil
    }

    /// Whether the extended key usage extension lists `oid`, given as its DER encoding (tag and length
    /// included): a byte search of the extension's value, a SEQUENCE of such encodings, for a purpose OpenSSL
    /// has no flag for. Wraps `X509_EXTENSION_get_data`.
    func extendedKeyUsageLists(encodedOID oid: [UInt8]) -> Bool {
        let index = X509_get_ext_by_NID(x509, NID_ext_key_usage, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index), let value = X509_EXTENSION_get_data(ext),
            let data = ASN1_STRING_get0_data(value)
        else { return false }
        let bytes = UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(value)))
        guard bytes.count >= oid.count else { return false }
        return (0...(bytes.count - oid.count)).contains { start in oid.indices.allSatisfy { bytes[start + $0] == oid[$0] } }
    }

    /// The certificate has a subject key identifier. Wraps `X509_get0_subject_key_id`.
    var hasSubjectKeyIdentifier: Bool { X509_get0_subject_key_id(x509) != nil }

    /// Which fields the authority key identifier holds, or `nil` without the extension. Wraps
    /// `X509_get0_authority_key_id`, `X509_get0_authority_issuer` and `X509_get0_authority_serial`.
    var authorityKeyIdentifier: (hasKeyIdentifier: Bool, hasIssuer: Bool, hasSerial: Bool)? {
        guard hasExtension(NID_authority_key_identifier) else { return nil }
        return (
            X509_get0_authority_key_id(x509) != nil, X509_get0_authority_issuer(x509) != nil,
            X509_get0_authority_serial(x509) != nil
        )
    }

    /// Whether the authority key identifier's keyIdentifier differs from the subject key identifier, both
    /// present (a root naming another key than its own). Wraps `ASN1_OCTET_STRING_cmp`.
    var namesAnotherKeyThanItsOwn: Bool {
        guard let authority = X509_get0_authority_key_id(x509), let subject = X509_get0_subject_key_id(x509) else {
            return false
        }
        return ASN1_OCTET_STRING_cmp(authority, subject) != 0
    }

    /// Whether the certificate has an extension of kind `nid`. Wraps `X509_get_ext_by_NID`.
    func hasExtension(_ nid: Int32) -> Bool { X509_get_ext_by_NID(x509, nid, -1) >= 0 }

    /// Whether the extension of kind `nid` is present and marked critical. Wraps `X509_EXTENSION_get_critical`.
    func isCriticalExtension(_ nid: Int32) -> Bool {
        let index = X509_get_ext_by_NID(x509, nid, -1)
        guard index >= 0, let ext = X509_get_ext(x509, index) else { return false }
        return X509_EXTENSION_get_critical(ext) == 1
    }

    /// The serial number: whether it is negative, and how many octets its value takes (0 for zero; OpenSSL
    /// keeps the magnitude without a sign octet). Wraps `X509_get0_serialNumber`.
    var serialNumber: (isNegative: Bool, octets: Int) {
        guard let serial = X509_get0_serialNumber(x509), let data = ASN1_STRING_get0_data(serial) else { return (false, 0) }
        let magnitude = UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(serial)))
        let leadingZeros = magnitude.prefix { $0 == 0 }.count
        return (ASN1_STRING_type(serial) == V_ASN1_NEG_INTEGER, magnitude.count - leadingZeros)
    }

    /// The public key's algorithm (`NID_rsaEncryption`, `NID_X9_62_id_ecPublicKey`, `NID_ED25519`…), its size
    /// in bits and, for EC keys, the named curve (`prime256v1`), or `nil` when OpenSSL cannot decode the key.
    /// Wraps `X509_get0_pubkey`, `EVP_PKEY_get_base_id`, `EVP_PKEY_get_bits` and `EVP_PKEY_get_group_name`.
    var publicKeyAlgorithm: (nid: Int32, bits: Int, curve: String?)? {
        guard let key = X509_get0_pubkey(x509) else { return nil }
        let nid = EVP_PKEY_get_base_id(key)
        var curve: String?
        if nid == NID_X9_62_id_ecPublicKey {
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            if EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 {
                curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        return (nid, Int(EVP_PKEY_get_bits(key)), curve)
    }

    /// The authority information access extension: absent, well-formed with this many access descriptions
    /// (possibly zero), or malformed (it does not decode). Wraps `X509_get_ext_d2i`.
    var authorityInformationAccessCount: Int?? {
        guard hasExtension(NID_info_access) else { return .none }
        guard let raw = X509_get_ext_d2i(x509, NID_info_access, nil, nil) else {
            _ = drainOpenSSLErrors()  // the decoding error is the answer
            return .some(nil)
        }
        let descriptions = OpaquePointer(raw)
        defer { AUTHORITY_INFO_ACCESS_free(descriptions) }
        return .some(Int(OPENSSL_sk_num(descriptions)))
    }
}
