import COpenSSL
import COpenSSLShims
import FoundationEssentials
import Glibc

extension Certificate {
    /// The start of the validity period. Wraps `X509_get0_notBefore`.
    ///
    /// A time OpenSSL cannot read counts as the far future, so such a certificate is never taken as valid yet.
    public var notBefore: Date { date(X509_get0_notBefore(x509)) ?? .distantFuture }

    /// The end of the validity period. Wraps `X509_get0_notAfter`.
    ///
    /// A time OpenSSL cannot read counts as the far past, so such a certificate is never taken as unexpired.
    public var notAfter: Date { date(X509_get0_notAfter(x509)) ?? .distantPast }

    /// Whole days from `now` until ``notAfter``, rounded down: 0 on the last day, negative once expired.
    public func daysUntilExpiry(from now: Date = Date()) -> Int {
        Int((notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
    }

    /// The subject alternative names, in certificate order, as OpenSSL prefixes them: `DNS:valid.test`,
    /// `IP:127.0.0.1`, `IP:::1`, `email:…`, `URI:…`; other kinds by their kind alone (`othername`).
    /// Empty when the certificate has no SAN extension (a CN-only certificate). Wraps `X509_get_ext_d2i`.
    public var subjectAlternativeNames: [String] {
        guard let raw = X509_get_ext_d2i(x509, NID_subject_alt_name, nil, nil) else {
            _ = drainOpenSSLErrors()  // a damaged extension queues a reason; it just has no readable names
            return []
        }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        return (0..<pinpath_sk_GENERAL_NAME_num(names)).compactMap { index in
            pinpath_sk_GENERAL_NAME_value(names, index).map { Self.alternativeName($0.pointee) }
        }
    }

    /// The public key, or `nil` for an algorithm this OpenSSL does not support. Wraps `X509_get_pubkey`.
    public var publicKey: PublicKey? {
        guard let key = X509_get_pubkey(x509) else {
            _ = drainOpenSSLErrors()
            return nil
        }
        return PublicKey(owning: key)
    }

    /// The key's algorithm and size: `RSA 2048`, `EC P-256`, `Ed25519` (see ``PublicKey/keyType``), or
    /// `unsupported` when OpenSSL cannot decode the key.
    public var keyType: String { publicKey?.keyType ?? "unsupported" }

    /// The signature algorithm by OpenSSL's long name, as `openssl x509 -text` prints it
    /// (`sha256WithRSAEncryption`, `ecdsa-with-SHA256`, `ED25519`), or the dotted OID when it has no name.
    /// Wraps `X509_get0_signature` and `OBJ_obj2txt`.
    public var signatureAlgorithm: String {
        var algorithm: UnsafePointer<X509_ALGOR>?
        X509_get0_signature(nil, &algorithm, x509)
        var object: OpaquePointer?
        X509_ALGOR_get0(&object, nil, nil, algorithm)
        guard let object else { return "unknown" }
        var buffer = [CChar](repeating: 0, count: 128)
        let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 0)
        guard length > 0 else { return "unknown" }
        return Self.string(nulTerminated: buffer)
    }

    /// The SHA-256 of the whole DER certificate in upper-case hex pairs joined by colons, as
    /// `openssl x509 -fingerprint -sha256` prints it. Not a pin: a pin hashes only the public key.
    /// Wraps `X509_digest`.
    public var sha256Fingerprint: String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(x509, EVP_sha256(), &digest, &length) == 1 else {
            _ = drainOpenSSLErrors()
            return ""
        }
        let hex: [Character] = Array("0123456789ABCDEF")
        return digest.prefix(Int(length)).map { String([hex[Int($0 >> 4)], hex[Int($0 & 0xf)]]) }
            .joined(separator: ":")
    }

    private static func alternativeName(_ name: GENERAL_NAME) -> String {
        switch name.type {
        case GEN_DNS: return "DNS:\(text(name.d.dNSName))"
        case GEN_EMAIL: return "email:\(text(name.d.rfc822Name))"
        case GEN_URI: return "URI:\(text(name.d.uniformResourceIdentifier))"
        case GEN_IPADD: return "IP:\(address(name.d.iPAddress))"
        case GEN_RID: return "Registered ID"
        case GEN_DIRNAME: return "DirName"
        case GEN_X400: return "X400Name"
        case GEN_EDIPARTY: return "EdiPartyName"
        default: return "othername"
        }
    }

    /// The bytes of an IA5String, which certificates use for names (ASCII by definition).
    private static func text(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String {
        guard let string, let data = ASN1_STRING_get0_data(string) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))), as: UTF8.self)
    }

    /// An iPAddress SAN is 4 or 16 raw bytes; printed in the usual text forms (`::1`, not OpenSSL's `0:0:…:1`).
    private static func address(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String {
        guard let string, let data = ASN1_STRING_get0_data(string) else { return "" }
        let length = Int(ASN1_STRING_length(string))
        return ipAddressText(UnsafeRawBufferPointer(start: data, count: length)) ?? "<\(length)-byte address>"
    }

    private static func string(nulTerminated buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
