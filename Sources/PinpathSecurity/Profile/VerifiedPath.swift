/// The path OpenSSL built and verified, as the profile rules see it.
struct VerifiedPath {
    /// Leaf first, then each issuer, ending at the anchor when OpenSSL reached one.
    let chain: [Certificate]
    /// How many certificates of ``chain``, from the leaf, the server sent (the rest came from the store).
    let servedCount: Int
    /// Whether the last certificate of ``chain`` is a trust anchor (from the store).
    let endsAtAnchor: Bool
    /// The host name or IP address checked, if any (no brackets, no trailing dot).
    let host: String?
    /// The maximum number of certificates in a path, anchor included; `nil` for no limit beyond OpenSSL's.
    let maximumDepth: Int?

    var leaf: Certificate { chain[0] }

    /// The leaf's subject alternative name extension, decoded once for the several rules that read it (each
    /// decoding cost about as much as the rule itself).
    lazy var leafSubjectAlternativeNames: CertificateExtension<[GeneralName]>? = leaf.subjectAlternativeNameExtension

    /// Whether the certificate at `depth` is the trust anchor: the last of the path, from the store.
    func isAnchor(_ depth: Int) -> Bool { endsAtAnchor && depth == chain.count - 1 }

    /// The path is a self-signed leaf alone: trusted as itself (in the store, pinned, or allowed as an untrusted
    /// anchor), not issued by a CA. The Baseline Requirements profile subscriber certificates a CA issues, so
    /// their leaf rules (EKU, `cA`, key identifier form) do not apply to it.
    var leafIsItsOwnIssuer: Bool { chain.count == 1 && leaf.isSelfSigned }
}
