import PinpathReachability
import PinpathSecurity

/// A request that did not produce an acceptable response: why, with the response, the trust evaluation or
/// the reachability verdict when there was one, so that callers (the agent's events) need nothing else.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// What went wrong: the request core's part of pinpath's one failure vocabulary.
    public typealias Code = FailureCategory

    /// What went wrong.
    public let code: Code
    /// A sentence for a person naming the request and what was wrong.
    public internal(set) var message: String
    /// The response, when one arrived (status and content-type errors, decoding errors).
    public var response: SessionResponse?
    /// The security policy's evaluation, when it ran in the handshake and rejected the server.
    public var evaluation: TrustEvaluation?
    /// The https proxy whose own handshake was refused, when it was: ``evaluation`` is then the proxy's (held to
    /// the policies of the proxy's host), not the origin's, which was never reached.
    public var refusingProxy: Proxy?
    /// The monitor's verdict, for ``Code/unreachable``.
    public var reachability: TargetReachability?
    /// libcurl's result code, when the failure came from libcurl.
    public var curlCode: Int?
    /// The address and port a connection was made to before the failure (`127.0.0.1:8443`), as
    /// ``SessionResponse/remoteAddress``; the proxy's through one.
    public var remoteAddress: String?
    /// The TLS version the handshake negotiated, when it got as far as the server's certificate (a handshake
    /// refused for its chain or pins included).
    public var tlsVersion: String?
    /// How long the request took and the phases it reached (``PhaseTimings/phasesReached``), when libcurl ran it.
    public var timings: PhaseTimings?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, response: SessionResponse? = nil, evaluation: TrustEvaluation? = nil,
        reachability: TargetReachability? = nil, curlCode: Int? = nil
    ) {
        self.code = code
        self.message = message
        self.response = response
        self.evaluation = evaluation
        self.reachability = reachability
        self.curlCode = curlCode
    }

    /// The message.
    public var description: String { message }
}
