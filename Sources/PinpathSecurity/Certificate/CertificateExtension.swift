/// An extension as a certificate carries it: whether it is critical, and its value, or `nil` when OpenSSL
/// cannot decode it.
struct CertificateExtension<Value> {
    let value: Value?
    let critical: Bool
}
