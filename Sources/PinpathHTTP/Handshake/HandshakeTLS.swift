import PinpathSecurity

/// The TLS part of a `tls://` check: the session's shared client context for the request's terms (its client
/// certificate), the name sent as SNI and checked, and the verifier that runs the security policy inside the
/// handshake (``TLSClientHandshake``, PinpathSecurity's).
struct HandshakeTLS {
    let context: TLSClientContext
    /// The name sent as SNI (none for an IP address); the verifier checks its own host.
    let serverName: String
    let verifier: HandshakeVerifier

    /// Sets up the handshake on the connected socket, which the check keeps and closes.
    func start(socket: Int32, label: String) throws(HTTPError) -> Running {
        do {
            let handshake = try TLSClientHandshake(context: context, socket: socket, serverName: serverName, verifier: verifier)
            return Running(handshake: handshake, verifier: verifier, label: label)
        } catch {
            throw HTTPError(.tlsFailed, "\(label): \(error.message)")
        }
    }

    /// One handshake in progress.
    final class Running {
        enum Step {
            case wantRead
            case wantWrite
            /// The negotiated session with the verifier's evaluation, or the error in the categories a libcurl
            /// transfer's would have (``HandshakeRefusal`` for the verifier's verdict).
            case finished(Result<TLSDetails, HTTPError>)
        }

        private let handshake: TLSClientHandshake
        private let verifier: HandshakeVerifier
        private let label: String

        init(handshake: TLSClientHandshake, verifier: HandshakeVerifier, label: String) {
            self.handshake = handshake
            self.verifier = verifier
            self.label = label
        }

        /// The server's certificate reached the verifier in this handshake.
        var verifierReached: Bool { handshake.verifierReached }

        /// The version the handshake negotiated, as the verifier saw it when the certificate arrived.
        var protocolVersion: String? { verifier.lastProtocolVersion }

        func advance() -> Step {
            switch handshake.advance() {
            case .wantRead: return .wantRead
            case .wantWrite: return .wantWrite
            case .finished: return .finished(outcome)
            }
        }

        /// The handshake did not end within the connection phase, in libcurl's words for it.
        func timeout(elapsed: Duration) -> HTTPError {
            let waiting = verifierReached ? "" : " (no TLS answer from the server: is it a TLS port?)"
            return HTTPError(
                .timedOut, "\(label): Connection timed out after \(elapsed.wholeMilliseconds) milliseconds in the TLS handshake\(waiting)")
        }

        private var outcome: Result<TLSDetails, HTTPError> {
            let verdict = verifierReached ? verifier.lastResult : nil
            switch handshake.outcome {
            case .success(let negotiated)?:
                // Fail closed: a completed handshake counts only when this verifier ran on it and let it through.
                guard case .success(let evaluation)? = verdict, evaluation.allowsConnection else {
                    return .failure(
                        HTTPError(
                            .tlsFailed,
                            """
                            \(label): the TLS handshake completed without pinpath's verifier accepting this connection under the \
                            request's security policy and trust store; refused
                            """))
                }
                return .success(TLSDetails(version: negotiated.version, cipher: negotiated.cipher, evaluation: evaluation))
            case .failure(let failure)?:
                if let verdict, let refusal = HandshakeRefusal.error(for: verdict, request: label) { return .failure(refusal) }
                return .failure(HTTPError(.tlsFailed, "\(label): \(failure.reason)"))
            case nil:
                return .failure(HTTPError(.tlsFailed, "\(label): the TLS handshake ended without an outcome"))
            }
        }
    }
}
