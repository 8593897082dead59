import FoundationEssentials

/// A pin validation failure report with RFC 7469 §3's fields and TrustKit's `enforce-pinning` and
/// `validation-result`.
public struct PinFailureReport: Sendable {
    /// When the evaluation ran.
    public let dateTime: Date
    /// The host connected to.
    public let hostname: String
    /// The port connected to.
    public let port: Int
    /// The pattern the pins were configured for, when known.
    public let notedHostname: String?
    /// Whether that configuration covers subdomains.
    public let includeSubdomains: Bool
    /// When the pins stop applying, if ever.
    public let effectiveExpirationDate: Date?
    /// What the server sent, as PEM, leaf first.
    public let servedCertificateChain: [String]
    /// The chain OpenSSL built and verified, as PEM, leaf first.
    public let validatedCertificateChain: [String]
    /// The pins configured, as `pin-sha256="…"`.
    public let knownPins: [String]
    /// Whether pin failures block the connection.
    public let enforcePinning: Bool
    /// TrustKit's `TSKTrustEvaluationResult`: 0 success (also: pins expired, so not checked), 1 no matching
    /// pin, 2 invalid certificate chain (host mismatch included, as Apple's trust evaluation counts it).
    public let validationResult: Int

    init(_ evaluation: TrustEvaluation) {
        dateTime = evaluation.date
        hostname = evaluation.host
        port = evaluation.port
        notedHostname = evaluation.policy.notedHostname
        includeSubdomains = evaluation.policy.includeSubdomains
        effectiveExpirationDate = evaluation.policy.expires
        servedCertificateChain = evaluation.servedChain.map(\.pem)
        validatedCertificateChain = evaluation.verifiedChain.map(\.pem)
        knownPins = evaluation.policy.sortedPins.map(\.hpkp)
        enforcePinning = evaluation.policy.enforce
        switch evaluation.failure?.reason {
        case .none, .some(.pinsExpired): validationResult = 0
        case .some(.pinMismatch): validationResult = 1
        default: validationResult = 2
        }
    }

    /// The fields in RFC 7469's order with its names, for a JSON writer.
    public var fields: [(name: String, value: ReportValue)] {
        [
            ("date-time", .string(Self.rfc3339(dateTime))),
            ("hostname", .string(hostname)),
            ("port", .integer(port)),
            ("noted-hostname", notedHostname.map(ReportValue.string) ?? .null),
            ("include-subdomains", .boolean(includeSubdomains)),
            ("effective-expiration-date", effectiveExpirationDate.map { .string(Self.rfc3339($0)) } ?? .null),
            ("served-certificate-chain", .strings(servedCertificateChain)),
            ("validated-certificate-chain", .strings(validatedCertificateChain)),
            ("known-pins", .strings(knownPins)),
            ("enforce-pinning", .boolean(enforcePinning)),
            ("validation-result", .integer(validationResult)),
        ]
    }

    private static func rfc3339(_ date: Date) -> String { date.formatted(.iso8601) }
}
