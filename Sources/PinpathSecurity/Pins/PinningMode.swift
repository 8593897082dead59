/// What a ``SecurityPolicy`` checks beyond the chain, as AFNetworking's `AFSSLPinningMode`.
public enum PinningMode: String, Sendable, CaseIterable {
    /// No pinning: the chain must validate against the trust store.
    case none
    /// Some certificate of the verified chain must have a pinned SubjectPublicKeyInfo.
    case publicKey = "public_key"
    /// The pinned certificates are the only trust anchors, and one of them must be in the verified chain.
    case certificate

    /// Orders the modes by what they demand of a chain: `none` < `public_key` < `certificate`.
    var strictness: Int {
        switch self {
        case .none: 0
        case .publicKey: 1
        case .certificate: 2
        }
    }
}
