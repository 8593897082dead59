import COpenSSL

/// Certificates found by their subject name: a loaded store (``TrustStore``), the system bundle's index
/// (``CertificateBundleIndex``), or the system store as ``PublicAnchors`` reads it (``SystemAnchors``).
protocol AnchorLookup {
    /// The certificates whose subject is `name` (an `X509_NAME`; none for `nil`).
    func certificates(named name: OpaquePointer?) throws -> [Certificate]
}

extension AnchorLookup {
    /// The certificates whose subject is `certificate`'s subject.
    func certificates(withSubjectOf certificate: Certificate) throws -> [Certificate] {
        try certificates(named: X509_get_subject_name(certificate.x509))
    }

    /// The certificates whose subject is `certificate`'s issuer: the candidates for having issued it.
    func certificates(withIssuerOf certificate: Certificate) throws -> [Certificate] {
        try certificates(named: X509_get_issuer_name(certificate.x509))
    }
}
