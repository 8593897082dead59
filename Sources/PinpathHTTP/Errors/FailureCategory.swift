import PinpathSupport

/// Why something failed, in the one vocabulary pinpath uses everywhere: ``HTTPError/code``, the agent's
/// `error_category` and `pinpath_probe_failure_info{category}`, and `error.category` in every `--json` output of
/// the command line. The raw value is the name written there.
///
/// The request core raises the first group; the agent adds what a probe's expectations find; the command line adds
/// its own (a bad argument, a file it cannot use). docs/agent.md's category table is checked against this list.
public enum FailureCategory: String, CaseIterable, ErrorCode {
    // The request core's (``HTTPError``).

    /// The URL cannot be used (not absolute, not a kind pinpath sends, malformed), or names a kind the request
    /// core refuses (``ServiceKind/refusal``): nothing was resolved, connected or sent.
    case invalidURL = "invalid_url"
    /// A header name or value is not allowed (empty name, CR or LF, a separator in the name).
    case invalidHeader = "invalid_header"
    /// Parameters or a body that cannot be encoded (a value JSON cannot represent, text that is not JSON).
    case invalidBody = "invalid_body"
    /// A file given for an upload (a multipart part) cannot be read.
    case unreadableFile = "unreadable_file"
    /// The target is not reachable according to the monitor: refused before any DNS query, or (the addresses
    /// libcurl resolved, each without a usable route) before any connection. ``HTTPError/reachability`` says why.
    case unreachable
    /// The host name did not resolve.
    case resolveFailed = "resolve_failed"
    /// No connection could be made (refused, no route, every address skipped).
    case connectFailed = "connect_failed"
    /// The connect or total timeout passed.
    case timedOut = "timed_out"
    /// The TLS handshake failed for a reason other than the certificates (protocol, alert, no shared cipher).
    case tlsFailed = "tls_failed"
    /// The chain or the host name did not validate: see ``HTTPError/evaluation`` when a policy ran.
    case tlsInvalid = "tls_invalid"
    /// A certificate of a chain that reaches a trust anchor for the host is expired or not yet valid
    /// (``TrustFailure/isOutsideValidity``): the message names the certificate and its date first, the chain's other
    /// problems after. A chain that reaches no anchor, or is for another host, is ``tlsInvalid`` whatever its dates.
    case tlsExpired = "tls_expired"
    /// A certificate of the chain is revoked (a CRL given, the stapled OCSP response, or the leaf's OCSP responder
    /// said so): refused in the handshake; see ``HTTPError/evaluation``.
    case revoked
    /// The security policy's pins rejected the server in the handshake: see ``HTTPError/evaluation``.
    case policyRejected = "policy_rejected"
    /// An https request was redirected to an http URL and insecure redirects are not allowed, or a request held to
    /// its host and port (``RequestOptions/redirectsStayOnHostAndPort``) was redirected elsewhere: nothing was sent
    /// to it. A TLS failure: the request would have lost its protection.
    case insecureRedirect = "insecure_redirect"
    /// A redirect to another origin would have sent the request body again, and the caller did not trust redirect
    /// targets with it (``RequestOptions/keepsHeadersAcrossOrigins``): nothing was sent there.
    case crossOriginBody = "cross_origin_body"
    /// Too many redirects.
    case tooManyRedirects = "too_many_redirects"
    /// The server's answer broke its protocol (malformed status line, oversized headers, reset mid-response).
    case protocolError = "protocol_error"
    /// The response's status code is not one the caller accepts (``ResponseSerializer``) or expects (an
    /// endpoint's `expect.status`).
    case unexpectedStatus = "unexpected_status"
    /// The response has a body whose content type is not acceptable.
    case unexpectedContentType = "unexpected_content_type"
    /// The body could not be decoded (invalid JSON).
    case invalidResponse = "invalid_response"
    /// A downloaded body's SHA-256 is not the one the caller expected (``DownloadOptions/expectedSHA256``): the
    /// destination was left as it was.
    case digestMismatch = "digest_mismatch"
    /// The task was cancelled; the transfer was stopped.
    case cancelled
    /// libcurl is unusable: not the OpenSSL build, or it failed to set up.
    case engineUnavailable = "engine_unavailable"
    /// Any other transfer failure; the message has libcurl's text.
    case transferFailed = "transfer_failed"

    // The agent's probes: what an endpoint's `expect:` found.

    /// A TCP or mail server's greeting did not match `expect.banner`.
    case unexpectedBanner = "unexpected_banner"
    /// The body did not meet `expect.body_contains` or `expect.body_matches`.
    case unexpectedBody = "unexpected_body"
    /// A response header did not meet `expect.headers`.
    case unexpectedHeader = "unexpected_header"
    /// A body or header pattern search reached a limit before it could decide.
    case patternLimit = "pattern_limit"
    /// The probe took longer than `expect.max_duration`.
    case tooSlow = "too_slow"

    // The command line's own.

    /// A bad argument, option or flag value: nothing was done.
    case usage
    /// A file the command was given cannot be used (a chain, a pin file, a CRL).
    case data
    /// The configuration file has problems (`check-config`, `run`).
    case config
    /// Something the command needs is not available (a monitor, a listener's address).
    case unavailable
    /// The command could not write its output.
    case output
    /// The command's own documented outcome that no other category names.
    case failed

    /// The name, as written in events, metrics and JSON (`tls_invalid`); also the description.
    public var name: String { rawValue }
}
