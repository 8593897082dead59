/// The steps of a ``SecurityPolicy`` evaluation, in order: the first that fails gives the verdict, so this
/// order is the order failures are reported in. Each step lives in its own file under `Rules/`; adding one
/// touches its file and this list.
enum TrustRules {
    static let ordered: [any VerifierRule<EvaluationContext, TrustFailure>] = [
        ServedChainPresent(), ChainVerifiedByOpenSSL(), PinsNotExpired(), PinnedPublicKeyInChain(),
        PinnedCertificateInChain(),
    ]
}
