import FoundationEssentials
import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// TLS audits on a handshake engine of their own, for a program without a ``Session`` (`pinpath audit`): every
/// audit of a batch is a socket on the engine's one thread instead of a thread of the blocking pool held in
/// `poll` for the whole handshake, and nothing of the request core is loaded (no libcurl, no transfer thread).
/// No reachability gate, as audits never had one. The engine's thread starts with the first audit.
package final class AuditEngine: Sendable {
    private let engine = HandshakeEngine()

    package init() {}

    deinit { engine.stop() }

    /// Runs each audit given to it on this engine, for a `TLSAuditBatch` (``TLSAuditBatch/connector``). An address
    /// with an IPv6 zone (`fe80::1%eth0`) is connected from the blocking pool, as before the engine: the engine's
    /// addresses (``IPAddress``) carry no scope, without which the kernel refuses a link-local `connect()`.
    ///
    /// One thread is enough: a batch runs 8 audits at once (``TLSAuditBatch/defaultConcurrency``), and a handshake's
    /// work on it is about 0.6 ms against a network's round trips (a hostile server's key exchange at most about
    /// 30 ms: `PINPATH_MAXIMUM_DH_BITS`); only a batch of servers on loopback keeps it busy.
    package var connector: TLSAuditConnector {
        TLSAuditConnector { [engine] attempt in
            if attempt.dialled.host.contains("%") { return await TLSAuditConnector.blockingPool.connect(attempt) }
            return await engine.audit(attempt)
        }
    }

    /// How many threads the engine has started: one at most, for the tests that say so.
    package var threadsStarted: Int { engine.threadsStarted }

    /// Ends the audits in flight (each fails `connect_failed`, naming the shutdown) and the engine's thread.
    package func shutdown() { engine.stop() }
}

extension HandshakeEngine {
    /// One audit's connection and handshake on the engine: the name resolved on the blocking pool (not bounded by
    /// the audit's timeout, as an audit's own connection resolves), the addresses raced as a check's are (RFC
    /// 8305), then an audit's handshake (``HandshakeAudit``). No reachability gate, as audits never had one. The
    /// errors are an audit's own (``TLSConnectionError``'s codes and words).
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
                addresses: HandshakeCheck.interleavingFamilies(addresses), addressCheck: nil, started: started,
                resolved: .now, connectDeadline: attempt.deadline, deadline: attempt.deadline, tls: nil, exchange: nil, audit: audit))
        let result = await run(check)
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
