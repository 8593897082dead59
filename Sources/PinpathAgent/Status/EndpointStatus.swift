import FoundationEssentials
import PinpathHTTP
import PinpathSecurity
import PinpathSupport

/// What the status document shows of one endpoint: its configuration's face, its state as the agent's events
/// report it, and the last probe reduced to a few strings and numbers (never the probe's certificates: 1,000
/// endpoints' chains would cost megabytes to keep). Times are formatted when recorded, once per probe, so that
/// rendering 1,000 endpoints copies strings rather than formatting 30,000 dates.
struct EndpointStatus: Sendable {
    /// The endpoint as configured: what a reload that changes it replaces.
    struct Configured: Sendable {
        var name: String
        /// As events show it: credentials and query values removed (``DisplayURL``).
        var url: String
        var kind: ServiceKind
        var intervalMilliseconds: Int
        /// `nil` for an endpoint no configured policy applies to.
        var policy: Policy?

        /// The policy's configured face; whether its pins matched is the last probe's.
        struct Policy: Sendable {
            var names: [String]
            var mode: PinningMode
            /// Sorted, so that the document says the same thing at every refresh.
            var pins: [String]
            var enforced: Bool
        }

        init(_ endpoint: EndpointConfiguration) {
            name = endpoint.name
            url = SessionRequest(method: endpoint.method, url: endpoint.url).displayURL
            kind = endpoint.kind
            intervalMilliseconds = Int(endpoint.interval / .milliseconds(1))
            policy = endpoint.security.map { applied in
                Policy(
                    names: applied.names, mode: applied.policy.mode, pins: applied.policy.pins.map(\.description).sorted(),
                    enforced: applied.policy.enforce)
            }
        }
    }

    /// The last probe, as `probe.completed` reports it.
    struct LastProbe: Sendable {
        var time: String
        var outcome: ProbeResult.Outcome
        var errorCategory: String?
        /// Cut to ``StatusTextBudget/lastProbeMessage`` scalars (events keep more); an enforced pin failure's long
        /// account is replaced by its one-line summary, as in `probe.completed`.
        var message: String?
        var statusCode: Int?
        var timings: PhaseTimings?
        var remoteAddress: String?
        var tlsVersion: String?
    }

    /// One certificate of a chain.
    struct ChainEntry: Sendable {
        var subject: String
        var issuer: String
        var notAfter: String
        var pin: String
    }

    /// The leaf of the last verified chain (or the served one, when verification failed) and that chain, their
    /// names within ``StatusTextBudget/certificate``.
    struct CertificateSummary: Sendable {
        var subject: String
        var issuer: String
        var sans: [String]
        /// The leaf's SANs left out of ``sans`` (past ``EndpointStatus/sansLimit`` or the budget).
        var sansOmitted: Int
        var notAfter: Date
        var notAfterText: String
        var chain: [ChainEntry]
        /// The certificates left out of ``chain`` (past ``EndpointStatus/chainLimit``).
        var chainOmitted: Int

        /// The summary of `chain`, leaf first. Names are taken from one budget in the order a reader needs them:
        /// the leaf's subject and issuer, each certificate's names (every certificate up to the limit is kept, for
        /// its pin), then as many whole SANs as still fit.
        init(_ chain: [Certificate]) {
            let leaf = chain[0]
            var budget = StatusTextBudget(StatusTextBudget.certificate)
            subject = budget.take(leaf.subject, limit: nameLimit)
            issuer = budget.take(leaf.issuer, limit: nameLimit)
            notAfter = leaf.notAfter
            notAfterText = leaf.notAfter.formatted(.iso8601)
            self.chain = chain.prefix(chainLimit).map {
                ChainEntry(
                    subject: budget.take($0.subject, limit: nameLimit), issuer: budget.take($0.issuer, limit: nameLimit),
                    notAfter: $0.notAfter.formatted(.iso8601), pin: $0.spkiPin.description)
            }
            chainOmitted = chain.count - self.chain.count
            let allSANs = leaf.subjectAlternativeNames
            sans = budget.takeWhole(Array(allSANs.prefix(sansLimit)), limit: nameLimit).kept
            sansOmitted = allSANs.count - sans.count
        }
    }

    /// The last pin failure seen (enforced or report-only), suppressed in events or not.
    struct PinFailure: Sendable {
        var time: String
        var enforced: Bool
        var message: String
        var servedPins: [String]
    }

    /// One probe's duration, for the page's chart.
    struct Duration: Sendable {
        var time: String
        /// In whole microseconds (`total_ms` to three decimals, as events write it); `nil` when nothing was timed.
        var totalMicroseconds: Int?
        var success: Bool
    }

    /// How many durations are kept.
    static let durationsKept = 30
    /// The certificates of a chain shown, and the length of each name: a server chooses both (as events cut them).
    static let chainLimit = AgentEvents.servedChainLimit
    static let nameLimit = AgentEvents.servedSubjectLimit
    /// The most SANs shown of a leaf (fewer when their names use up the budget): a server chooses how many it sends.
    static let sansLimit = 100

    var configured: Configured
    var state = EndpointState.Status.unknown
    var since: String?
    var cause: String?
    var lastProbe: LastProbe?
    private var durationRing = Ring<Duration>(capacity: durationsKept)
    var certificate: CertificateSummary?
    /// The last evaluation's profile (`rfc5280 (anchor from ca_file)`), for the policy.
    var profile: String?
    /// `nil`: no pins, or nothing evaluated them yet (no probe, or the chain failed before the pins were checked).
    var pinsMatched: Bool?
    var lastPinFailure: PinFailure?

    init(_ configured: Configured) { self.configured = configured }

    /// The durations, oldest first.
    var durations: [Duration] { durationRing.elements }

    /// Calls `body` with each duration, oldest first, without copying them.
    func forEachDuration(_ body: (Duration) -> Void) { durationRing.forEach(body) }

    /// What a probe's result changes in a record, made before the store's lock is taken: the certificates' names
    /// and pins are read from OpenSSL here, so that the lock is held only to copy them in.
    struct ProbeUpdate: Sendable {
        var lastProbe: LastProbe
        var duration: Duration
        /// Whether a handshake ran (`nil`: the rest says nothing), and what the policy's evaluation said.
        var evaluated: (profile: String?, pinsMatched: Bool?)?
        var certificate: CertificateSummary?
        var pinFailure: PinFailure?

        init(_ result: ProbeResult) {
            let time = EndpointStatus.format(result.started)
            let message = AgentEvents.probeMessage(result).map { UntrustedText.truncated($0, limit: StatusTextBudget.lastProbeMessage) }
            lastProbe = LastProbe(
                time: time, outcome: result.outcome, errorCategory: result.errorCategory?.rawValue, message: message,
                statusCode: result.kind.isHTTP ? result.statusCode : nil, timings: result.timings, remoteAddress: result.remoteAddress,
                tlsVersion: result.tlsVersion)
            duration = Duration(
                time: time, totalMicroseconds: result.timings.map { Int(($0.total * 1_000_000).rounded()) },
                success: result.outcome == .success)
            guard let evaluation = result.evaluation else { return }
            let pinsMatched: Bool? =
                switch evaluation.failure?.reason {
                case nil: true
                case .pinMismatch?: false
                default: nil  // the chain or the name failed first: the pins were not the question
                }
            evaluated = (evaluation.appliedProfile?.description, pinsMatched)
            let chain = evaluation.chainValidated ? evaluation.verifiedChain : evaluation.servedChain
            if !chain.isEmpty { certificate = CertificateSummary(chain) }
            if let failure = result.pinFailure {
                pinFailure = PinFailure(
                    time: time, enforced: !failure.allowsConnection,
                    message: UntrustedText.truncated(failure.failure?.message ?? "", limit: StatusTextBudget.pinFailureMessage),
                    servedPins: failure.servedChain.prefix(EndpointStatus.chainLimit).map(\.spkiPin.description))
            }
        }
    }

    /// Takes a probe's result: one record's fields and a ring slot.
    mutating func apply(_ update: ProbeUpdate) {
        lastProbe = update.lastProbe
        durationRing.append(update.duration)
        guard let (profile, pinsMatched) = update.evaluated else { return }
        self.profile = profile
        // Null for a policy without pins, whatever the evaluation said.
        if configured.policy?.pins.isEmpty == false { self.pinsMatched = pinsMatched }
        if let certificate = update.certificate { self.certificate = certificate }
        if let pinFailure = update.pinFailure { lastPinFailure = pinFailure }
    }

    /// RFC 3339 with microseconds, as events write `time`.
    static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let whole = seconds.rounded(.down)
        return UTCTime.format(seconds: Int(whole), microseconds: Int((seconds - whole) * 1_000_000))
    }
}
