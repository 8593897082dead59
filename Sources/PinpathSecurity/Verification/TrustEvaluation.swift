import FoundationEssentials

/// The outcome of evaluating a served chain against a ``SecurityPolicy``: a value, not a bool, carrying what
/// a pin-failure report needs.
public struct TrustEvaluation: Sendable {
    /// Trusted, or rejected with the reason.
    public enum Verdict: Sendable, Equatable {
        /// The chain, the name and the pins (if any) satisfied the policy.
        case trusted
        /// Something did not: see the failure.
        case rejected(TrustFailure)
    }

    /// The verdict.
    public let verdict: Verdict
    /// Whether the connection may proceed: trusted, or a pin failure the policy only reports (report-only,
    /// expired pins) on a chain and name that are valid.
    public let allowsConnection: Bool
    /// The host name or IP address evaluated.
    public let host: String
    /// The port, for the report.
    public let port: Int
    /// When the evaluation ran (the report's `date-time`).
    public let date: Date
    /// The policy applied.
    public let policy: SecurityPolicy
    /// What the server sent, leaf first.
    public let servedChain: [Certificate]
    /// The chain OpenSSL built and verified from the leaf (partial when verification failed, and cut after
    /// the first certificate whose signature does not verify); pins were matched against this only.
    public let verifiedChain: [Certificate]
    /// Whether ``verifiedChain`` ends at an anchor of the policy (a trust-store certificate, or a pinned one in
    /// `certificate` mode), every link's signature verified, and its leaf is for ``host``, whatever else was
    /// wrong with it (its dates, a structure check): the service's own chain, whose expiry is named first and
    /// is `tls.certificate_expired`'s. False for a chain that ends at no anchor or is for another host (an
    /// interception, a wrong server: its dates are the attacker's choice), when no verification ran, and after
    /// a refusal whose server did not prove it holds the expired leaf's key in a second handshake.
    public let chainIsAnchoredForHost: Bool
    /// The profile the verified chain was held to and why (`rfc5280 (anchor from ca_file)`); `nil` when no
    /// verification ran (the server sent no certificate).
    public let appliedProfile: AppliedProfile?
    /// The OCSP response the server stapled, as read in the handshake; `nil` without one (or outside a handshake).
    public internal(set) var ocspStaple: OCSPStaple? = nil
    /// Under ``RevocationMode/ocsp``, what OCSP said about the leaf (from the staple or the responder), or why
    /// it said nothing; `nil` under the other modes and outside a handshake.
    public internal(set) var ocspCheck: OCSPCheck? = nil
    /// The question for the leaf's OCSP responder the handshake stopped for
    /// (``TrustFailure/Reason/ocspQueryNeeded``).
    package internal(set) var pendingOCSPQuery: OCSPQuery? = nil

    /// The failure, when rejected.
    public var failure: TrustFailure? {
        if case .rejected(let failure) = verdict { return failure }
        return nil
    }

    /// Whether ``verifiedChain`` is a chain that validated (its signatures, dates, constraints and the host): the
    /// evaluation trusted it, or refused it only for its pins or its OCSP status. Expiry warnings and
    /// `probe_ssl_last_chain_expiry_timestamp_seconds` come from such chains only; a chain that did not
    /// validate is partial or wrong, and its dates say nothing about the service's.
    public var chainValidated: Bool {
        guard let reason = failure?.reason else { return true }
        return [.pinMismatch, .pinsExpired, .ocspStapleMissing, .ocspStapleInvalid, .ocspStatusUnknown, .ocspUnavailable]
            .contains(reason)
    }

    /// The RFC 7469 / TrustKit report of this evaluation.
    public var report: PinFailureReport { PinFailureReport(self) }
}
