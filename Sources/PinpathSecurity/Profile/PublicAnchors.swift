import COpenSSL

/// The system's public store as ``ProfileSelection/auto`` consults it: whether an anchor a policy names is
/// public after all.
enum PublicAnchors {
    /// The system store, prepared once per process on first use (only policies with anchors of their own need
    /// it). Its bundle is indexed by subject rather than loaded (``SystemAnchors``): a one-shot `pinpath audit`
    /// or `verify` asks about one or two names, and loading Debian's bundle cost it most of its time.
    static let system = SystemAnchors.process()

    /// How many certificates the server sent above an anchor are followed towards the system store.
    static let maximumSteps = 8

    /// Whether the system store vouches for `anchor`: it holds a certificate with the anchor's subject and key,
    /// or one that issued the anchor (signature verified), directly or through issuers among `served`.
    static func vouch(for anchor: Certificate, servedAlongside served: [Certificate]) throws -> Bool {
        try vouch(for: anchor, servedAlongside: served, in: system)
    }

    /// Whether `system` vouches for `anchor`, as ``vouch(for:servedAlongside:)`` asks the system store.
    static func vouch(for anchor: Certificate, servedAlongside served: [Certificate], in system: some AnchorLookup) throws -> Bool {
        var current = anchor
        for _ in 0..<maximumSteps {
            if try system.certificates(withSubjectOf: current).contains(where: { $0.hasSameKey(as: current) }) { return true }
            if try system.certificates(withIssuerOf: current).contains(where: { $0.issued(current) }) { return true }
            guard let next = served.first(where: { $0 != current && $0.issued(current) }) else { return false }
            current = next
        }
        return false
    }
}

extension Certificate {
    /// Whether both certificates hold the same public key. Wraps `EVP_PKEY_eq`.
    func hasSameKey(as other: Certificate) -> Bool {
        guard let mine = X509_get0_pubkey(x509), let theirs = X509_get0_pubkey(other.x509) else { return false }
        return EVP_PKEY_eq(mine, theirs) == 1
    }

    /// Whether this certificate issued `subject`: names, key identifiers and key usage agree
    /// (`X509_check_issued`) and `subject`'s signature verifies under this key (`X509_verify`).
    func issued(_ subject: Certificate) -> Bool {
        defer { _ = drainOpenSSLErrors() }  // a failed check queues its reason
        guard X509_check_issued(x509, subject.x509) == X509_V_OK, let key = X509_get0_pubkey(x509) else { return false }
        return X509_verify(subject.x509, key) == 1
    }
}
