/// What a ``SecurityPolicy`` checks beyond the chain, as AFNetworking's `AFSSLPinningMode`.
public enum PinningMode: String, Sendable, CaseIterable {
    /// No pinning: the chain must validate against the trust store.
    case none
    /// Some certificate of the verified chain must have a pinned SubjectPublicKeyInfo.
    case publicKey = "public_key"
    /// The pinned certificates are the only trust anchors, and one of them must be in the verified chain.
    case certificate
}
