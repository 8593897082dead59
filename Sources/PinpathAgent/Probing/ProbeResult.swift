import FoundationEssentials
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

/// What one probe of an endpoint found.
package struct ProbeResult: Sendable {
    /// How the probe ended, for the endpoint's state.
    package enum Outcome: String, Sendable {
        /// The response was acceptable (status, body, and the security policy, or report-only pins).
        case success
        /// The service failed: no connection, a TLS or pin rejection, a timeout, an unexpected answer.
        case failure
        /// The probe was not attempted: the monitor says the endpoint cannot be reached from here.
        case unreachable
    }

    package var endpoint: String
    /// What the probe did (the endpoint URL's scheme): which fields and phases apply.
    package var kind: ServiceKind = .https
    package var outcome: Outcome
    /// When the probe started.
    package var started: Date
    /// The status code, when an HTTP response arrived (never for the other kinds).
    package var statusCode: Int?
    /// Phase timings, when a response arrived.
    package var timings: PhaseTimings?
    /// The address connected to.
    package var remoteAddress: String?
    /// The negotiated TLS version.
    package var tlsVersion: String?
    /// Why it failed: the request core's ``HTTPError/code``, or what the endpoint's expectations found
    /// (``FailureCategory/unexpectedStatus`` and the others of that group).
    package var errorCategory: FailureCategory?
    /// A sentence for a person (never carrying header values or the query string).
    package var message: String?
    /// The security policy's evaluation of the handshake, when one ran: pins, chains, report-only failures.
    package var evaluation: TrustEvaluation?
    /// The monitor's verdict, when the endpoint was not reachable.
    package var reachability: TargetReachability?

    /// A pin failure to report: a rejected evaluation that is about pins (enforced or report-only).
    package var pinFailure: TrustEvaluation? {
        guard let evaluation, let reason = evaluation.failure?.reason, reason == .pinMismatch else { return nil }
        return evaluation
    }
}
