import PinpathReachability
import PinpathSecurity

/// A request that did not produce an acceptable response: why, with the response, the trust evaluation or
/// the reachability verdict when there was one, so that callers (the agent's events) need nothing else.
public struct HTTPError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as an extensible set of codes. The names are the agent's error categories.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in logs and JSON.
        public var description: String { name }

        /// The URL cannot be used (not absolute, not a kind pinpath sends, malformed), or names a kind the
        /// request core refuses (``ServiceKind/refusal``): nothing was resolved, connected or sent.
        public static let invalidURL = Code(name: "invalid_url")
        /// A header name or value is not allowed (empty name, CR or LF, a separator in the name).
        public static let invalidHeader = Code(name: "invalid_header")
        /// Parameters or a body that cannot be encoded (a value JSON cannot represent, text that is not JSON).
        public static let invalidBody = Code(name: "invalid_body")
        /// A file given for an upload (a multipart part) cannot be read.
        public static let unreadableFile = Code(name: "unreadable_file")
        /// The target is not reachable according to the monitor: refused before any DNS query, or (the addresses
        /// libcurl resolved, each without a usable route) before any connection. ``HTTPError/reachability`` says
        /// why.
        public static let notReachable = Code(name: "not_reachable")
        /// The security policy rejected the server in the handshake (pins): see ``HTTPError/evaluation``.
        public static let policyRejected = Code(name: "policy_rejected")
        /// The chain or the host name did not validate: see ``HTTPError/evaluation`` when a policy ran.
        public static let tlsInvalid = Code(name: "tls_invalid")
        /// A certificate of the chain is expired or not yet valid (``TrustFailure/isOutsideValidity``), whatever
        /// else was wrong with it: the message names the certificate and its date first.
        public static let tlsExpired = Code(name: "tls_expired")
        /// A certificate of the chain is revoked (a CRL given, the stapled OCSP response, or the leaf's OCSP
        /// responder said so): refused in the handshake; see ``HTTPError/evaluation``.
        public static let revoked = Code(name: "revoked")
        /// The TLS handshake failed for another reason (protocol, alert, no shared cipher).
        public static let tlsFailed = Code(name: "tls_failed")
        /// The host name did not resolve.
        public static let resolveFailed = Code(name: "resolve_failed")
        /// No connection could be made (refused, no route, every address skipped).
        public static let connectFailed = Code(name: "connect_failed")
        /// The connect or total timeout passed.
        public static let timedOut = Code(name: "timeout")
        /// The server's answer broke HTTP (malformed status line, oversized headers, reset mid-response).
        public static let protocolError = Code(name: "protocol_error")
        /// The response arrived but its status code is not acceptable.
        public static let unacceptableStatus = Code(name: "unacceptable_status")
        /// The response has a body whose content type is not acceptable.
        public static let unacceptableContentType = Code(name: "unacceptable_content_type")
        /// The body could not be decoded (invalid JSON).
        public static let invalidResponse = Code(name: "invalid_response")
        /// An https request was redirected to an http URL and insecure redirects are not allowed: nothing
        /// was sent to it. A TLS failure: the request would have lost its protection.
        public static let insecureRedirect = Code(name: "insecure_redirect")
        /// A redirect to another origin would have sent the request body again, and the caller did not trust
        /// redirect targets with it (``RequestOptions/keepsHeadersAcrossOrigins``): nothing was sent there.
        public static let crossOriginBody = Code(name: "cross_origin_body")
        /// Too many redirects.
        public static let tooManyRedirects = Code(name: "too_many_redirects")
        /// The task was cancelled; the transfer was stopped.
        public static let cancelled = Code(name: "cancelled")
        /// libcurl is unusable: not the OpenSSL build, or it failed to set up.
        public static let engineUnavailable = Code(name: "engine_unavailable")
        /// Any other transfer failure; the message has libcurl's text.
        public static let transferFailed = Code(name: "transfer_failed")
    }

    /// What went wrong.
    public let code: Code
    /// A sentence for a person naming the request and what was wrong.
    public let message: String
    /// The response, when one arrived (status and content-type errors, decoding errors).
    public var response: HTTPResponse?
    /// The security policy's evaluation, when it ran in the handshake and rejected the server.
    public var evaluation: TrustEvaluation?
    /// The https proxy whose own handshake was refused, when it was: ``evaluation`` is then the proxy's (held to
    /// the policies of the proxy's host), not the origin's, which was never reached.
    public var refusingProxy: Proxy?
    /// The monitor's verdict, for ``Code/notReachable``.
    public var reachability: TargetReachability?
    /// libcurl's result code, when the failure came from libcurl.
    public var curlCode: Int?
    /// The address and port a connection was made to before the failure (`127.0.0.1:8443`), as
    /// ``HTTPResponse/remoteAddress``; the proxy's through one.
    public var remoteAddress: String?
    /// The TLS version the handshake negotiated, when it got as far as the server's certificate (a handshake
    /// refused for its chain or pins included).
    public var tlsVersion: String?
    /// How long the request took and the phases it reached (``PhaseTimings/phasesReached``), when libcurl ran it.
    public var timings: PhaseTimings?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, response: HTTPResponse? = nil, evaluation: TrustEvaluation? = nil,
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
