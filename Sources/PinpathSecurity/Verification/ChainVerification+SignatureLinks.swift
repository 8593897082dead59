import COpenSSL

/// The signature of every link of the chain OpenSSL built, checked whatever OpenSSL got to.
extension ChainVerification {
    /// The first certificate of `chain` (leaf first) whose signature does not verify, and why: one not signed
    /// by the next certificate's key, or a self-signed certificate at the top, sent by the server (it is among
    /// the first `servedCount`), that is not signed by its own key. A certificate at the top that is not
    /// self-signed has no issuer here to check it with: its key is proven by the link below it. Links below
    /// `start` are taken as checked. Wraps `X509_verify` and `X509_self_signed`.
    static func firstBrokenLink(_ chain: [Certificate], servedCount: Int, from start: Int = 0)
        -> (depth: Int, error: Int32)?
    {
        defer { _ = drainOpenSSLErrors() }  // a failed X509_verify queues the reason, already said by the code
        for depth in start..<chain.count {
            let certificate = chain[depth]
            let issuer: Certificate
            if depth + 1 < chain.count {
                issuer = chain[depth + 1]
            } else if depth < servedCount && X509_self_signed(certificate.x509, 0) == 1 {
                issuer = certificate
            } else {
                break
            }
            guard let key = X509_get0_pubkey(issuer.x509) else {
                return (depth, X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY)
            }
            if X509_verify(certificate.x509, key) != 1 { return (depth, X509_V_ERR_CERT_SIGNATURE_FAILURE) }
        }
        return nil
    }
}
