import COpenSSL
import FoundationEssentials

/// A certificate of a chain outside its validity period at the time of a verification: expired (after its
/// notAfter) or not yet valid (before its notBefore). What a refusal names first: an expiry is an outage with a
/// date and a fix, while OpenSSL reports whichever error it meets first (a missing Authority Key Identifier on an
/// expired leaf, say) and stops there.
struct ValidityLapse: Sendable, Equatable {
    /// Its position in the chain: 0 is the leaf.
    let depth: Int
    /// Its subject, for the message.
    let subject: String
    /// Expired, rather than not yet valid.
    let expired: Bool
    /// The notAfter of an expired certificate, the notBefore of one not yet valid.
    let boundary: Date
    /// The time the chain was verified at.
    let time: Date

    /// The first certificate of `chain`, from the leaf, outside its validity at `time`; nil when all are within.
    /// RFC 5280 §4.1.2.5 counts both boundary seconds in the period.
    static func first(in chain: [Certificate], at time: Date) -> ValidityLapse? {
        for (depth, certificate) in chain.enumerated() {
            let notAfter = certificate.notAfter
            if notAfter < time {
                return ValidityLapse(depth: depth, subject: certificate.subject, expired: true, boundary: notAfter, time: time)
            }
            let notBefore = certificate.notBefore
            if notBefore > time {
                return ValidityLapse(depth: depth, subject: certificate.subject, expired: false, boundary: notBefore, time: time)
            }
        }
        return nil
    }

    /// OpenSSL's code for it: `X509_V_ERR_CERT_HAS_EXPIRED` (10) or `X509_V_ERR_CERT_NOT_YET_VALID` (9).
    var verifyError: Int32 { expired ? X509_V_ERR_CERT_HAS_EXPIRED : X509_V_ERR_CERT_NOT_YET_VALID }

    /// `certificate has expired at depth 0 (CN=leaf): notAfter 2026-11-23T09:00:00Z, 4 days ago`.
    var description: String {
        let days = Int((abs(time.timeIntervalSince(boundary)) / 86_400).rounded(.down))
        let span = days == 0 ? "less than a day" : days == 1 ? "1 day" : "\(days) days"
        return expired
            ? "certificate has expired at depth \(depth) (\(subject)): notAfter \(boundary.formatted(.iso8601)), \(span) ago"
            : "certificate is not yet valid at depth \(depth) (\(subject)): notBefore \(boundary.formatted(.iso8601)), in \(span)"
    }
}
