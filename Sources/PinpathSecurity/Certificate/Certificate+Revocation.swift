import COpenSSL

extension Certificate {
    /// Whether the certificate carries the TLS feature extension (RFC 7633) listing `status_request` (5):
    /// "must-staple", the promise that its server always staples an OCSP response. Wraps
    /// `X509_get_ext_by_NID(NID_tlsfeature)`; the extension is a SEQUENCE OF INTEGER, read here directly.
    var requiresStapledOCSP: Bool {
        let index = X509_get_ext_by_NID(x509, NID_tlsfeature, -1)
        guard index >= 0, let extensionData = X509_get_ext(x509, index).flatMap({ X509_EXTENSION_get_data($0) }),
            let bytes = ASN1_STRING_get0_data(extensionData)
        else { return false }
        let der = Array(UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(extensionData))))
        guard der.count >= 2, der[0] == 0x30, Int(der[1]) == der.count - 2 else {
            return true  // a feature list it cannot read: assume the strict reading rather than ignore it
        }
        var cursor = 2
        while cursor + 2 <= der.count, der[cursor] == 0x02 {
            let length = Int(der[cursor + 1])
            guard cursor + 2 + length <= der.count else { return true }
            let value = der[(cursor + 2)..<(cursor + 2 + length)].reduce(0) { $0 << 8 | Int($1) }
            if value == 5 { return true }
            cursor += 2 + length
        }
        return false
    }
}
