import FoundationEssentials
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// TLS audits (`pinpath audit`) on the session's handshake engine: every audit of a batch is a socket on the
/// engine's one thread instead of a thread of the blocking pool held in `poll` for the whole handshake.
extension Session {
    /// Runs each audit given to it on this session's handshake engine, for a `TLSAuditBatch`
    /// (``TLSAuditBatch/connector``): the name resolved on the blocking pool (not bounded by the audit's timeout,
    /// as an audit's own connection resolves), the addresses raced as a check's are (RFC 8305), then an audit's
    /// handshake (``HandshakeAudit``). The errors are an audit's own (``TLSConnection``'s codes and words). The
    /// reachability gate judges each address only when the session has a monitor (`pinpath audit`'s has none).
    package var auditConnector: TLSAuditConnector {
        TLSAuditConnector { [self] attempt in await audit(attempt) }
    }

    /// One audit's connection and handshake on the engine.
    func audit(_ attempt: TLSAuditConnector.Attempt) async -> TLSAuditConnector.Outcome {
        let started = ContinuousClock.now
        let dialled = attempt.dialled
        var addresses: [IPAddress]
        if let address = IPAddress(dialled.host) {
            addresses = [address]
        } else {
            let resolved = await BlockingPool.shared.run {
                Result { () throws(TLSConnectionError) in try TLSConnection.addresses(of: dialled, label: attempt.label) }
            }
            switch resolved {
            case .success(let found): addresses = found.compactMap(IPAddress.init)
            case .failure(let error): return TLSAuditConnector.Outcome(address: nil, handshake: .failure(error))
            }
        }
        let audit = HandshakeAudit(attempt)
        // A check's plan wants a URL for its response, which an audit does not read.
        let url = URL(string: "tls://\(dialled)") ?? URL(string: "tls://audit.invalid")!
        let check = HandshakeCheck(
            plan: HandshakeCheck.Plan(
                url: url, label: attempt.label, host: dialled.host, port: dialled.port,
                addresses: HandshakeCheck.interleavingFamilies(addresses), addressCheck: gate?.addressCheck, started: started,
                resolved: .now, connectDeadline: attempt.deadline, deadline: attempt.deadline, tls: nil, exchange: nil, audit: audit))
        let result = await runOnEngine(check)
        if let outcome = audit.outcome { return outcome }
        // The engine ended it before it could: stopped (a shutdown), or epoll failed.
        let message: String
        switch result {
        case .success: message = "\(attempt.label): the handshake engine ended the audit without an outcome"
        case .failure(let error): message = error.message
        }
        return TLSAuditConnector.Outcome(address: nil, handshake: .failure(TLSConnectionError(.connectFailed, message)))
    }
}
