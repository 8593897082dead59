/// The roles certificates play in a verified path, as the certificate rules ask about them.
extension VerifiedPath {
    /// Whether the certificate at `depth` is the trust anchor: the last of the path, from the store.
    func isAnchor(_ depth: Int) -> Bool { endsAtAnchor && depth == chain.count - 1 }

    /// The path is a self-signed leaf alone: trusted as itself (in the store, pinned, or allowed as an untrusted
    /// anchor), not issued by a CA. The Baseline Requirements profile subscriber certificates a CA issues, so
    /// their leaf rules (EKU, `cA`, key identifier form) do not apply to it.
    var leafIsItsOwnIssuer: Bool { chain.count == 1 && leaf.isSelfSigned }
}
