import FoundationEssentials
import PinpathSecurity

/// Decides when to emit `tls.certificate_expiring` for one endpoint: when a certificate of its verified
/// chain is within the warning window, once when it enters the window and then once a day, when its whole
/// days left go down (30, 29, …, 0).
///
/// A warning on every probe (every 30 s) would drown the log; one warning only would be lost in it. A
/// daily reminder per certificate is what certificate monitors (and a person reading the log) expect. The
/// memory is the current chain only: a certificate that leaves the chain (renewed) is forgotten, and its
/// successor starts afresh. A restart warns again at the next probe.
///
/// A value with no locking: the agent keeps one per endpoint, on one task.
public struct ExpiryCheck: Sendable {
    /// One certificate's expiry, as the probe saw it.
    public struct Certificate: Hashable, Sendable {
        /// What tells certificates apart: the SHA-256 fingerprint, or the SPKI pin (a renewal with the same
        /// key still differs by `notAfter`, which is part of the identity too).
        public var identity: String
        /// The subject, for the event.
        public var subject: String
        /// The end of its validity.
        public var notAfter: Date

        /// - Parameters:
        ///   - identity: fingerprint or pin.
        ///   - subject: for the event.
        ///   - notAfter: end of validity.
        public init(identity: String, subject: String, notAfter: Date) {
            self.identity = identity
            self.subject = subject
            self.notAfter = notAfter
        }
    }

    /// A certificate to warn about.
    public struct Warning: Sendable, Equatable {
        /// The certificate.
        public let certificate: Certificate
        /// Its position in the verified chain: 0 is the leaf.
        public let depth: Int
        /// Whole days left before `notAfter` (0 on its last day, negative once expired).
        public let daysLeft: Int
    }

    /// How long before `notAfter` warnings start.
    public let window: Duration
    /// The days left last warned about, per certificate of the current chain.
    private var warned: [Certificate: Int] = [:]

    /// - Parameter window: the configured warning window (for example 30 days).
    public init(window: Duration) {
        self.window = window
    }

    /// The warnings to emit for the verified chain seen at `now`, leaf first. Call after each probe that
    /// verified a chain.
    public mutating func check(chain: [Certificate], now: Date) -> [Warning] {
        let windowSeconds = window.inSeconds
        var seen: [Certificate: Int] = [:]
        var warnings: [Warning] = []
        for (depth, certificate) in chain.enumerated() {
            let secondsLeft = certificate.notAfter.timeIntervalSince(now)
            guard secondsLeft <= windowSeconds else { continue }
            let daysLeft = Int((secondsLeft / 86_400).rounded(.down))
            if let last = warned[certificate], last <= daysLeft {
                seen[certificate] = last
            } else {
                seen[certificate] = daysLeft
                warnings.append(Warning(certificate: certificate, depth: depth, daysLeft: daysLeft))
            }
        }
        warned = seen
        return warnings
    }

    /// The warnings due for the verified chain of a handshake's evaluation (see ``check(chain:now:)``).
    mutating func check(_ evaluation: TrustEvaluation, now: Date) -> [Warning] {
        let chain = evaluation.verifiedChain.map {
            Certificate(identity: $0.sha256Fingerprint, subject: $0.subject, notAfter: $0.notAfter)
        }
        return check(chain: chain, now: now)
    }
}
