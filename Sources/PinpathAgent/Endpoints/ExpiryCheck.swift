import FoundationEssentials
import PinpathSecurity

/// Decides when to emit `tls.certificate_expiring` for one endpoint: once for each threshold of
/// `cert_expiry_warning` (for example 30d, 14d, 7d, 1d) that a certificate of its verified chain crosses, the
/// chain having validated (``TrustEvaluation/chainValidated``); and `tls.certificate_expired` once for each
/// certificate found past its notAfter in a built chain that reaches an anchor of the policy for the host
/// (``TrustEvaluation/chainIsAnchoredForHost``), validated or not (an expired certificate fails validation: its
/// expiry is the outage, not a warning about one). Certificates a server merely sends, and chains that end at no
/// anchor or are for another host, report nothing: their dates are whoever served them's choice, and an
/// interception is `tls_invalid`, not "renew it".
///
/// A warning on every probe (every 30 s) would drown the log; a few warnings, each closer to the end, are
/// what certificate monitors (and a person reading the log) expect. A certificate first seen already within
/// several thresholds warns once, for the smallest of them. The memory is the current chain only: a
/// certificate that leaves the chain (renewed) is forgotten, and its successor starts afresh. There is no
/// state file: a restart (not a reload) warns again, once, for the smallest threshold each certificate is within.
/// Expired certificates are remembered longer, across probes: the last ``expiredMemory`` reported (by fingerprint),
/// so a server alternating between chains reports each expired certificate once, not on every probe.
///
/// A value with no locking: the agent keeps one per endpoint, on one task.
struct ExpiryCheck: Sendable {
    /// One certificate's expiry, as the probe saw it.
    struct Certificate: Hashable, Sendable {
        /// What tells certificates apart: the SHA-256 fingerprint, or the SPKI pin (a renewal with the same
        /// key still differs by `notAfter`, which is part of the identity too).
        var identity: String
        /// The subject, for the event.
        var subject: String
        /// The end of its validity.
        var notAfter: Date
    }

    /// A certificate to warn about.
    struct Warning: Sendable, Equatable {
        /// The certificate.
        let certificate: Certificate
        /// Its position in the verified chain: 0 is the leaf.
        let depth: Int
        /// Whole days left before `notAfter` (0 on its last day, negative once expired).
        let daysLeft: Int
        /// The threshold crossed: the smallest one the certificate is within.
        let threshold: Duration
    }

    /// A certificate of the anchored chain past its notAfter.
    struct Expired: Sendable, Equatable {
        /// The certificate.
        let certificate: Certificate
        /// Its position in the chain: 0 is the leaf.
        let depth: Int
        /// Whole days since its notAfter (0 on the first day after it).
        let daysExpired: Int
    }

    /// The thresholds, longest first; empty when warnings are off.
    let thresholds: [Duration]
    /// The smallest threshold warned about, per certificate of the current chain.
    private var warned: [Certificate: Duration] = [:]
    /// The expired certificates already reported, the most recently seen last; at most ``expiredMemory``.
    private var reportedExpired: [Certificate] = []
    /// How many reported expired certificates are remembered: a chain has at most the verification depth's
    /// certificates (10 by default), so this holds several chains a server may alternate between, while what a
    /// hostile server can make the agent keep stays small.
    static let expiredMemory = 64

    /// - Parameter thresholds: the configured thresholds (for example 30, 14, 7 and 1 days), in any order;
    ///   zero ones are ignored.
    init(thresholds: [Duration]) {
        self.thresholds = Set(thresholds.filter { $0 > .zero }).sorted(by: >)
    }

    /// The warnings to emit for the verified chain seen at `now`, leaf first. Call after each probe that
    /// verified a chain.
    mutating func check(chain: [Certificate], now: Date) -> [Warning] {
        var seen: [Certificate: Duration] = [:]
        var warnings: [Warning] = []
        for (depth, certificate) in chain.enumerated() {
            let secondsLeft = certificate.notAfter.timeIntervalSince(now)
            // An expired certificate is `tls.certificate_expired`'s (``expired(anchoredChain:now:)``), not a warning.
            guard secondsLeft >= 0 else { continue }
            // Longest first: the thresholds it is within are a prefix, the last of them the smallest.
            guard let threshold = thresholds.last(where: { secondsLeft <= $0.inSeconds }) else { continue }
            if let last = warned[certificate], last <= threshold {
                seen[certificate] = last
            } else {
                seen[certificate] = threshold
                let daysLeft = Int((secondsLeft / 86_400).rounded(.down))
                warnings.append(Warning(certificate: certificate, depth: depth, daysLeft: daysLeft, threshold: threshold))
            }
        }
        warned = seen
        return warnings
    }

    /// The expired certificates of `anchoredChain` (leaf first) not reported yet: each once while it is among the
    /// last ``expiredMemory`` reported. Call after each probe whose chain reached an anchor for the host.
    mutating func expired(anchoredChain: [Certificate], now: Date) -> [Expired] {
        var fresh: [Expired] = []
        for (depth, certificate) in anchoredChain.enumerated() where certificate.notAfter < now {
            if let index = reportedExpired.firstIndex(of: certificate) {
                reportedExpired.remove(at: index)  // seen again: the last to forget
            } else {
                let days = Int((now.timeIntervalSince(certificate.notAfter) / 86_400).rounded(.down))
                fresh.append(Expired(certificate: certificate, depth: depth, daysExpired: days))
            }
            reportedExpired.append(certificate)
        }
        reportedExpired.removeFirst(max(reportedExpired.count - Self.expiredMemory, 0))
        return fresh
    }

    /// The expired certificates of a handshake's chain not reported yet (see ``expired(anchoredChain:now:)``):
    /// none unless the chain reached an anchor of the policy for the host.
    mutating func expired(_ evaluation: TrustEvaluation, now: Date) -> [Expired] {
        // The usual case, nothing expired, without the fingerprints.
        guard evaluation.chainIsAnchoredForHost, evaluation.verifiedChain.contains(where: { $0.notAfter < now }) else {
            return []
        }
        return expired(
            anchoredChain: evaluation.verifiedChain.map {
                Certificate(identity: $0.sha256Fingerprint, subject: $0.subject, notAfter: $0.notAfter)
            }, now: now)
    }

    /// The warnings due for the verified chain of a handshake's evaluation (see ``check(chain:now:)``); none
    /// for a chain that did not validate, which changes nothing remembered.
    mutating func check(_ evaluation: TrustEvaluation, now: Date) -> [Warning] {
        guard evaluation.chainValidated else { return [] }
        // A chain with no certificate within the longest threshold warns about nothing and remembers nothing,
        // as ``check(chain:now:)`` would find: the usual case, answered without the fingerprints (a SHA-256
        // of each certificate and its hex, about 3% of a probe's instructions) and subjects it never reads.
        guard let longest = thresholds.first,
            evaluation.verifiedChain.contains(where: { $0.notAfter.timeIntervalSince(now) <= longest.inSeconds })
        else {
            warned = [:]
            return []
        }
        let chain = evaluation.verifiedChain.map {
            Certificate(identity: $0.sha256Fingerprint, subject: $0.subject, notAfter: $0.notAfter)
        }
        return check(chain: chain, now: now)
    }
}
