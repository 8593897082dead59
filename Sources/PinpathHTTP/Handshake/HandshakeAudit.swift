import PinpathSecurity

/// The TLS part of an audit on the handshake engine (`pinpath audit`, ``AuditEngine``): an audit's
/// handshake (``TLSClientHandshake/init(auditing:socket:serverName:label:)``: the audit's shared context, no
/// verifier, so any chain is seen and judged afterwards by `TLSAudit`), and the audit's outcome in the words and
/// categories of an audit's own connection (``TLSConnection``'s), not a check's libcurl-like ones.
///
/// `@unchecked Sendable`: made by the submitting task; ``outcome`` is written only by the engine's thread, before
/// the check's completion resumes that task, which reads it after (the resume orders the write before the read).
final class HandshakeAudit: @unchecked Sendable {
    let attempt: TLSAuditConnector.Attempt
    /// The audit's outcome, once the check has ended with one; `nil` when the engine ended it otherwise (a stop).
    private(set) var outcome: TLSAuditConnector.Outcome?

    init(_ attempt: TLSAuditConnector.Attempt) {
        self.attempt = attempt
    }

    /// Records how the audit ended (the first outcome only) and returns the check's error for it, of the same
    /// category as a check's.
    func ended(address: String?, _ result: Result<AuditedHandshake, TLSConnectionError>) -> HTTPError? {
        if outcome == nil { outcome = TLSAuditConnector.Outcome(address: address, handshake: result) }
        guard case .failure(let error) = result else { return nil }
        return HTTPError(error.code == .timedOut ? .timedOut : error.code == .handshakeFailed ? .tlsFailed : .connectFailed, error.message)
    }

    /// Sets up the handshake on the connected socket, which the check keeps and closes.
    func start(socket: Int32) throws(TLSConnectionError) -> Running {
        do {
            return Running(
                try TLSClientHandshake(
                    auditing: attempt.context, socket: socket, serverName: attempt.serverName, label: attempt.label),
                label: attempt.label)
        } catch {
            throw TLSConnectionError(.openSSLFailure, error.message)
        }
    }

    /// One audit handshake in progress.
    final class Running {
        enum Step {
            case wantRead
            case wantWrite
            /// What the server showed, or why there was no handshake, in an audit's words.
            case finished(Result<AuditedHandshake, TLSConnectionError>)
        }

        private let handshake: TLSClientHandshake
        private let label: String

        init(_ handshake: TLSClientHandshake, label: String) {
            self.handshake = handshake
            self.label = label
        }

        func advance() -> Step {
            switch handshake.advance() {
            case .wantRead: return .wantRead
            case .wantWrite: return .wantWrite
            case .finished: return .finished(handshake.auditResult(label: label))
            }
        }
    }
}
