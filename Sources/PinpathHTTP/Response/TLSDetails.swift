import PinpathSecurity

/// The negotiated TLS session and what the server presented.
public struct TLSDetails: Sendable {
    /// `TLSv1.3`.
    public var version: String
    /// `TLS_AES_256_GCM_SHA384`.
    public var cipher: String
    /// The security policy's evaluation of this connection's handshake: the served and verified chains, and
    /// a report-only pin failure that let the connection through. `nil` on a reused connection.
    public var evaluation: TrustEvaluation? {
        get { boxedEvaluation?.evaluation }
        set { boxedEvaluation = newValue.map(EvaluationBox.init) }
    }

    /// Held by reference: an evaluation is hundreds of bytes, and a response is copied several times on its
    /// way to the caller.
    private var boxedEvaluation: EvaluationBox?

    public init(version: String, cipher: String, evaluation: TrustEvaluation? = nil) {
        self.version = version
        self.cipher = cipher
        self.evaluation = evaluation
    }

    /// The SPKI pins of the chain OpenSSL verified, leaf first.
    public var verifiedChainPins: [String] { evaluation?.verifiedChain.map(\.spkiPin.description) ?? [] }
}

/// A ``TrustEvaluation`` behind one pointer (see ``TLSDetails``).
private final class EvaluationBox: Sendable {
    let evaluation: TrustEvaluation
    init(_ evaluation: TrustEvaluation) { self.evaluation = evaluation }
}
