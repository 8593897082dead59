import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// What `audit` and `verify` ask OCSP responders through under `--ocsp`: a request-core session, so that the
/// question passes the reachability gate and, for an https responder, a chain and host check against the
/// command's anchors, with no redirects and a size cap (``Session/ask(_:options:)``).
final class OCSPResponderSession {
    let session: Session
    private let monitor: ReachabilityMonitor?

    /// A session for `policy`'s OCSP questions, or `nil` when the policy asks none.
    /// - Throws: ``CommandFailure/unavailable(_:)`` when libcurl cannot start.
    static func start(for policy: SecurityPolicy, trustStore: TrustStore) async throws(CommandFailure) -> OCSPResponderSession? {
        guard policy.revocation == .ocsp else { return nil }
        let monitor = try? await ReachabilityMonitor.start()  // without netlink, questions go ungated
        do throws(HTTPError) {
            let session = try Session(Session.Configuration(trustStore: trustStore), monitor: monitor)
            return OCSPResponderSession(session: session, monitor: monitor)
        } catch {
            monitor?.stop()
            throw CommandFailure.unavailable(error.message)
        }
    }

    private init(session: Session, monitor: ReachabilityMonitor?) {
        self.session = session
        self.monitor = monitor
    }

    /// Ends the session's thread and the monitor.
    func stop() {
        session.shutdown()
        monitor?.stop()
    }
}
