import FoundationEssentials

/// How a server's chain, name and pins are judged: AFNetworking's `AFSecurityPolicy` (≥ 2.6) plus TrustKit's
/// report-only mode, pin expiration and backup-pin rule. Build one with the throwing initializer, which refuses
/// the configurations that would accept anything; evaluate chains with
/// ``evaluate(servedChain:host:port:trustStore:verificationTime:now:profile:maximumDepth:)``.
/// Policies compare by value (every field), so a reload or a connection pool can tell whether one changed.
public struct SecurityPolicy: Sendable, Hashable {
    /// What is checked beyond the chain.
    public let mode: PinningMode
    /// Pinned public keys: the given pins plus those of ``pinnedCertificates`` (AFNetworking derives public-key
    /// pins from its pinned certificates too).
    public let pins: Set<SPKIPin>
    /// Pinned certificates: the trust anchors in `certificate` mode.
    public let pinnedCertificates: [Certificate]
    /// Accept a chain that ends at no anchor of the trust store (self-signed, an unknown or untrusted root, an
    /// issuer not sent) or whose validity dates are out of range. Nothing else is excused: every certificate
    /// of the chain must be signed by the next one's key, CA constraints and key strength hold, and pins and
    /// the host name are still checked when configured. In `certificate` mode the chain must still validate
    /// against the pinned certificates, as in AFNetworking: only the trust store's verdict is skipped. Never
    /// applies once the pins expired, nor to a pin failure that is only reported: the trust store decides.
    public let allowInvalidCertificates: Bool
    /// Check the certificate against the host name (or IP address) being connected to.
    public internal(set) var validatesDomainName: Bool
    /// `false` is report-only: a pin failure is reported but the connection proceeds (TrustKit `enforcePinning`).
    public let enforce: Bool
    /// After this date the pins no longer apply: the chain is still validated against the trust store (even
    /// when invalid certificates are allowed), and the evaluation says the pins expired (TrustKit
    /// `expirationDate`).
    public let expires: Date?
    /// Which rules a verified path must also meet beyond OpenSSL's: ``ProfileSelection/auto`` by default
    /// (`webpki` for a path to the system's public store, `rfc5280` for one to an anchor the policy names).
    public internal(set) var profile: ProfileSelection
    /// The most certificates a path may have, anchor included; `nil` for OpenSSL's own limit.
    public internal(set) var maximumChainDepth: Int?
    /// Certificate revocation lists: when any is given, every certificate of the chain below the anchor needs
    /// a current CRL from its issuer among them, and must not be on it (RFC 5280 §6.3).
    public let crls: [CertificateRevocationList]
    /// What a handshake demands of the server's stapled OCSP response: ``RevocationMode/none`` by default.
    public let revocation: RevocationMode
    /// Under ``RevocationMode/ocsp``, whether a connection goes on when no usable answer comes from the leaf's
    /// responder (unreachable, names none, forged or stale answer): `false` by default (hard fail), since an
    /// operator who asked for OCSP asked to know, and blocking the responder is how a revoked certificate
    /// hides. A soft failure is still reported (``OCSPCheck/softFailed``). A `revoked` or `unknown` answer
    /// refuses the connection either way.
    public internal(set) var ocspSoftFail: Bool = false
    /// The pattern these pins were configured for, when the policy came from a ``HostPolicySet``
    /// (RFC 7469 `noted-hostname`).
    public internal(set) var notedHostname: String?
    /// Whether the configured pattern covers subdomains (RFC 7469 `include-subdomains`).
    public internal(set) var includeSubdomains: Bool = false

    /// Creates a policy, refusing what AFNetworking and TrustKit refuse.
    /// - Parameters:
    ///   - requiresBackupPin: in enforcing `public_key` mode, demand at least two pins so that a key rotation
    ///     cannot lock clients out (TrustKit). Pass `false` to waive it explicitly.
    ///   - now: the clock that decides whether `expires` has already passed.
    ///   - crls: revocation lists every evaluation checks the chain against (``crls``); none by default.
    ///   - revocation: what a handshake demands of the stapled OCSP response (``revocation``).
    ///   - profile: ``ProfileSelection/auto`` by default; `.webpki` or `.rfc5280` forces one for every path.
    ///   - ocspSoftFail: under ``RevocationMode/ocsp``, let a connection go on without a usable answer
    ///     (``ocspSoftFail``).
    /// - Throws: ``SecurityError`` with code `invalidPolicy` when a pinning mode has no pins (or no
    ///   certificates in `certificate` mode); when invalid certificates are allowed with domain-name validation
    ///   and nothing else to check (mode `none`, or no pins), with report-only pins (`enforce` false), or with
    ///   pins that expired at or before `now`: each would accept any certificate; with code `missingBackupPin` when
    ///   an enforcing `public_key` policy has one pin and the backup pin is not waived.
    public init(
        mode: PinningMode, pins: [SPKIPin] = [], pinnedCertificates: [Certificate] = [],
        allowInvalidCertificates: Bool = false, validatesDomainName: Bool = true, enforce: Bool = true,
        expires: Date? = nil, requiresBackupPin: Bool = true, now: Date = Date(),
        profile: ProfileSelection = .auto, maximumChainDepth: Int? = nil,
        crls: [CertificateRevocationList] = [], revocation: RevocationMode = .none, ocspSoftFail: Bool = false
    ) throws {
        if ocspSoftFail && revocation != .ocsp {
            throw SecurityError(
                .invalidPolicy,
                "soft_fail applies to revocation: ocsp only (this policy has revocation: \(revocation.rawValue)); remove it or set revocation: ocsp"
            )
        }
        let allPins = Set(pins).union(pinnedCertificates.map(\.spkiPin))
        switch mode {
        case .none:
            break
        case .publicKey where allPins.isEmpty:
            throw SecurityError(.invalidPolicy, "public_key pinning needs at least one pin or pinned certificate")
        case .certificate where pinnedCertificates.isEmpty:
            throw SecurityError(.invalidPolicy, "certificate pinning needs at least one pinned certificate")
        default:
            break
        }
        // AFNetworking's guard: allowing invalid certificates while claiming to check the name, with nothing
        // pinned, accepts any certificate for that name from anyone.
        if allowInvalidCertificates && validatesDomainName && (mode == .none || allPins.isEmpty) {
            throw SecurityError(
                .invalidPolicy,
                "allow_invalid_certificates with validates_domain_name needs a pinning mode with pins (it would accept any certificate)")
        }
        // Pins that are only reported, or no longer apply, check nothing: with invalid certificates allowed,
        // any certificate would pass. The evaluation falls back to the trust store in both cases, so the
        // combination would also not do what it says.
        if allowInvalidCertificates && !enforce {
            throw SecurityError(
                .invalidPolicy,
                """
                allow_invalid_certificates with enforce: false would accept any certificate (report-only pins stop nothing); set \
                enforce: true, or allow_invalid_certificates: false
                """
            )
        }
        if allowInvalidCertificates, let expires, expires <= now {
            throw SecurityError(
                .invalidPolicy,
                """
                allow_invalid_certificates with pins that expired at \(expires.formatted(.iso8601)) would accept any certificate \
                (expired pins are not checked); renew the pins and move expires to a later date, or set \
                allow_invalid_certificates: false
                """
            )
        }
        if mode == .publicKey && enforce && requiresBackupPin && allPins.count < 2 {
            throw SecurityError(
                .missingBackupPin,
                "an enforcing public_key policy needs a backup pin (2 or more, it has \(allPins.count)); add one or waive it explicitly")
        }
        self.mode = mode
        self.pins = allPins
        self.pinnedCertificates = pinnedCertificates
        self.allowInvalidCertificates = allowInvalidCertificates
        self.validatesDomainName = validatesDomainName
        self.enforce = enforce
        self.expires = expires
        self.profile = profile
        self.maximumChainDepth = maximumChainDepth
        self.crls = crls
        self.revocation = revocation
        self.ocspSoftFail = ocspSoftFail
    }

    /// Whether any certificate from anyone passes: invalid certificates allowed, no host check and nothing
    /// pinned. AFNetworking allows it for development servers, and so does pinpath, with a warning.
    public var acceptsAnyCertificate: Bool { allowInvalidCertificates && !validatesDomainName && (mode == .none || pins.isEmpty) }

    /// The pins a report lists as known: sorted, so reports and messages are stable.
    var sortedPins: [SPKIPin] { pins.sorted { $0.base64 < $1.base64 } }

    /// Whether the pins still apply at `now`.
    func pinsApply(at now: Date) -> Bool { expires.map { now < $0 } ?? true }
}
