import CCurl
import CCurlShims  // it includes <curl/curl.h> too, and clang may credit libcurl's constants to it
import Glibc
import PinpathReachability
import PinpathSecurity

/// How a failed libcurl transfer becomes an ``HTTPError``.
///
/// The verdicts of the transfer's own gates come first, because libcurl reports them only as their effect:
/// the security policy rejecting the server in the handshake (a failed handshake to libcurl), and the
/// reachability monitor skipping every address (a failed connect). Every other failure goes through
/// ``rules``, one table from libcurl's result code to the error's code, with rows that look further where
/// libcurl's code names something other than what happened.
enum CurlErrorMapping {
    /// What the mapping knows about a failed transfer.
    struct Failure {
        let code: CURLcode
        /// The request, for messages (`GET https://example.com/path`).
        let request: String
        /// libcurl's message for this failure (`CURLOPT_ERRORBUFFER`), if it wrote one.
        let libcurlMessage: String?
        /// The `errno` of the last failed socket operation; 0 for none.
        let socketError: Int32
        /// The security policy's result in the handshake of the connection this transfer opened, if one ran.
        let handshake: Result<TrustEvaluation, SecurityError>?
        /// The addresses the reachability gate skipped, in libcurl's order, when no socket was opened at all
        /// (none otherwise).
        let skippedAddresses: [TargetReachability]
        /// The transfer was https.
        let usedTLS: Bool
        /// libcurl connected to an address.
        let connected: Bool
        /// The blank line ending the last response's header section arrived.
        let headersComplete: Bool
        /// ``RequestOptions/maximumBodySize``.
        let maximumBodySize: Int
        /// What the request was.
        let kind: ServiceKind
        /// libcurl began a TLS handshake with the server (it made the connection's TLS context): for a STARTTLS
        /// kind, the server had accepted the upgrade.
        let upgradeStarted: Bool

        /// libcurl's message, or its text for the code, with the socket's error when libcurl left it out.
        ///
        /// libcurl 7.88 says "Couldn't connect to server" whether the server refused (RST), a router answered
        /// that the host is unreachable (ICMP), or the route was missing: the socket's error tells them apart.
        var detail: String {
            var detail = libcurlMessage ?? String(cString: curl_easy_strerror(code))
            if code == CURLE_COULDNT_CONNECT, socketError != 0 {
                let text = String(cString: strerror(socketError))
                if !detail.contains(text) { detail += " (\(text))" }
            }
            return detail
        }
    }

    /// One row of ``rules``: a failure with one of `codes` for which `condition` holds (always, without one)
    /// is an error of `kind`, whose message `message` writes (libcurl's ``Failure/detail`` without one).
    struct Rule: Sendable {
        let codes: Set<CURLcode>
        let kind: HTTPError.Code
        let condition: (@Sendable (Failure) -> Bool)?
        let message: (@Sendable (Failure) -> String)?

        init(
            _ codes: Set<CURLcode>, _ kind: HTTPError.Code, when condition: (@Sendable (Failure) -> Bool)? = nil,
            message: (@Sendable (Failure) -> String)? = nil
        ) {
            self.codes = codes
            self.kind = kind
            self.condition = condition
            self.message = message
        }

        func matches(_ failure: Failure) -> Bool { codes.contains(failure.code) && condition?(failure) ?? true }
    }

    /// OpenSSL's error strings name the library that raised them (`error:0A00045C:SSL routines::tlsv13 alert
    /// certificate required`); libcurl copies them into its message.
    static let openSSLErrorMarker = "SSL routines"
    /// OpenSSL's reason text for every alert the peer sent (`sslv3 alert handshake failure`, `tlsv13 alert …`).
    static let receivedAlertMarker = " alert "
    /// libcurl's limit on one response header line (`CURL_MAX_HTTP_HEADER`), in KiB.
    static let headerLineLimitKiB = Int(CURL_MAX_HTTP_HEADER) / 1024

    /// The table: the first row that matches gives the error's code; a code no row names is
    /// ``HTTPError/Code/transferFailed``. Rows with a condition come before the plain row for their code.
    static let rules: [Rule] = [
        // libcurl refuses a body larger than the limit from its Content-Length (CURLOPT_MAXFILESIZE_LARGE).
        Rule(
            [CURLE_FILESIZE_EXCEEDED], .protocolError,
            message: { "the response body is larger than \($0.maximumBodySize) bytes (libcurl: \($0.detail))" }),
        // A TLS 1.3 server that refuses the client (a client certificate required, or missing) sends its
        // alert after the client's side of the handshake is done, so libcurl meets it in SSL_read and reports
        // CURLE_RECV_ERROR. curl's message then carries OpenSSL's reason, whose text for every received alert
        // is "… alert …" ("tlsv13 alert certificate required"). A reset is reported with the socket's error
        // text instead ("Connection reset by peer") and stays a protocol error.
        Rule(
            [CURLE_RECV_ERROR, CURLE_SEND_ERROR], .tlsFailed,
            when: { $0.usedTLS && $0.detail.contains(openSSLErrorMarker) && $0.detail.contains(receivedAlertMarker) },
            message: { "the server ended TLS with an alert: \($0.detail)" }),
        // Once connected, libcurl 7.88 reports two broken responses with codes that name something else: a
        // status line it cannot parse, or none at all (HTTP/0.9), as CURLE_UNSUPPORTED_PROTOCOL, and a header
        // line over CURL_MAX_HTTP_HEADER (its header buffer is full) as CURLE_OUT_OF_MEMORY with no message.
        // The URL was checked before sending, so both are the server breaking HTTP.
        Rule(
            [CURLE_UNSUPPORTED_PROTOCOL], .protocolError, when: isBrokenResponse,
            message: { "the server's status line is not HTTP: \($0.detail)" }),
        Rule(
            [CURLE_OUT_OF_MEMORY], .protocolError, when: isBrokenResponse,
            message: { "a response header line is longer than libcurl's limit of \(headerLineLimitKiB) KiB (libcurl: \($0.detail))" }),
        // CURLOPT_USE_SSL = CURLUSESSL_ALL: the server did not offer the upgrade (or refused it), and libcurl
        // stopped there rather than go on in plaintext (it sends no QUIT on a connection that failed; seen on
        // 7.88.1). What was exchanged before is added by ``plaintextAccount(_:)``.
        Rule(
            [CURLE_USE_SSL_FAILED], .tlsFailed,
            message: { "the server does not offer \($0.kind.upgradeCommand ?? "STARTTLS") (or refused it) (libcurl: \($0.detail))" }),
        Rule([CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL], .invalidURL),
        Rule([CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY], .resolveFailed),
        Rule([CURLE_COULDNT_CONNECT], .connectFailed),
        Rule([CURLE_OPERATION_TIMEDOUT], .timedOut),
        Rule([CURLE_PEER_FAILED_VERIFICATION], .tlsInvalid),
        Rule(
            [
                CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND,
                CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE, CURLE_SSL_SHUTDOWN_FAILED, CURLE_USE_SSL_FAILED,
            ], .tlsFailed),
        Rule([CURLE_TOO_MANY_REDIRECTS], .tooManyRedirects),
        Rule(
            [
                CURLE_WEIRD_SERVER_REPLY, CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE,
                CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP3,
            ], .protocolError),
        Rule([CURLE_ABORTED_BY_CALLBACK], .cancelled),
        Rule([CURLE_READ_ERROR], .unreadableFile),
    ]

    /// A connection was made and the response's header section did not end: what went wrong is the response.
    private static func isBrokenResponse(_ failure: Failure) -> Bool { failure.connected && !failure.headersComplete }

    /// The error for `failure`.
    static func error(for failure: Failure) -> HTTPError {
        let code = failure.code
        let curlCode = Int(code.rawValue)
        let request = failure.request
        let account = plaintextAccount(failure).map { "; \($0)" } ?? ""
        // A refused OCSP staple fails the handshake in OpenSSL's status callback, which libcurl reports as a
        // connect error rather than a verification failure.
        if code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR, let verdict = failure.handshake,
            let refusal = HandshakeRefusal.error(for: verdict, request: request, account: account, curlCode: curlCode)
        {
            return refusal
        }
        if code == CURLE_COULDNT_CONNECT, let unreachable = HTTPError.noAddressReachable(failure.skippedAddresses, request: request) {
            return unreachable
        }
        // The server accepted STARTTLS and the handshake ended before the verifier saw a certificate: whatever
        // libcurl's code says, TLS did not start (a server that went on in plaintext, closed, or sent garbage).
        // A timeout stays a timeout, with the same account.
        if let command = failure.kind.upgradeCommand, failure.upgradeStarted, failure.handshake == nil {
            return HTTPError(
                code == CURLE_OPERATION_TIMEDOUT ? .timedOut : .tlsFailed,
                """
                \(request): the server accepted \(command), then no TLS handshake completed, so pinpath's verifier never checked \
                a certificate (libcurl: \(failure.detail))\(account)
                """, curlCode: curlCode)
        }
        guard let rule = rules.first(where: { $0.matches(failure) }) else {
            return HTTPError(.transferFailed, "\(request): \(failure.detail)\(account)", curlCode: curlCode)
        }
        return HTTPError(rule.kind, "\(request): \(rule.message?(failure) ?? failure.detail)\(account)", curlCode: curlCode)
    }

    /// For a STARTTLS kind that reached the server, what went over the connection in plaintext and what did not,
    /// from the stage the probe reached: no upgrade (nothing after the plaintext exchange), an upgrade whose
    /// handshake never reached the verifier (only the handshake's first flight after the command), a handshake
    /// the verifier refused (nothing after it), or a verified upgrade (everything after it over TLS). libcurl
    /// sends nothing when it gives up on a connection in its connect phase (no QUIT; seen on 7.88.1).
    static func plaintextAccount(_ failure: Failure) -> String? {
        guard let command = failure.kind.upgradeCommand, let exchange = failure.kind.plaintextExchange, failure.connected else {
            return nil
        }
        switch failure.handshake {
        case .success(let evaluation) where evaluation.allowsConnection:
            return "in plaintext only \(exchange) were exchanged; everything after \(command) went over the verified TLS connection"
        case .some:
            return """
                in plaintext only \(exchange) were exchanged, and after \(command) nothing was sent but the TLS handshake pinpath \
                refused
                """
        case nil where failure.upgradeStarted:
            return """
                in plaintext only \(exchange) were exchanged, and after \(command) nothing was sent but the start of a TLS handshake
                """
        case nil:
            return "it stopped before any TLS upgrade: at most \(exchange) were exchanged, in plaintext, and nothing more was sent"
        }
    }
}
