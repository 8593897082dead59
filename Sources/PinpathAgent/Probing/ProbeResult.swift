import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// What one probe of an endpoint found.
package struct ProbeResult: Sendable {
    /// How the probe ended, for the endpoint's state.
    enum Outcome: String, Sendable {
        /// The response was acceptable (status, body, and the security policy, or report-only pins).
        case success
        /// The service failed: no connection, a TLS or pin rejection, a timeout, an unexpected answer.
        case failure
        /// The probe was not attempted: the monitor says the endpoint cannot be reached from here.
        case unreachable
    }

    var endpoint: String
    /// What the probe did (the endpoint URL's scheme): which fields and phases apply.
    var kind: ServiceKind = .https
    var outcome: Outcome
    /// When the probe started.
    var started: Date
    /// The status code, when an HTTP response arrived (never for the other kinds).
    var statusCode: Int?
    /// Phase timings, when a response arrived.
    var timings: PhaseTimings?
    /// The address connected to.
    var remoteAddress: String?
    /// The negotiated TLS version.
    var tlsVersion: String?
    /// Why it failed: the request core's ``HTTPError/code``, or what the endpoint's expectations found
    /// (``FailureCategory/unexpectedStatus`` and the others of that group).
    var errorCategory: FailureCategory?
    /// A sentence for a person (never carrying header values or the query string).
    var message: String?
    /// The security policy's evaluation of the handshake, when one ran: pins, chains, report-only failures.
    var evaluation: TrustEvaluation?
    /// The monitor's verdict, when the endpoint was not reachable.
    var reachability: TargetReachability?

    /// A pin failure to report: a rejected evaluation that is about pins (enforced or report-only).
    var pinFailure: TrustEvaluation? {
        guard let evaluation, let reason = evaluation.failure?.reason, reason == .pinMismatch else { return nil }
        return evaluation
    }
}
