import PinpathSecurity

/// Suppresses repeats of the same pin failure report, as TrustKit does: a report identical to one emitted
/// less than `window` ago (24 h by default) is not emitted again, and the next one that is carries how many
/// were suppressed in between.
///
/// Identical means the same ``Key``: host, port, served chain, validated chain, known pins and validation
/// result. Dates are not part of it (they differ in every report). Memory is bounded: at most `capacity`
/// keys are kept; when a new key needs room, keys whose window has passed go first, then the oldest. A
/// forgotten key's suppressed count is lost with it, and its next report is emitted as a new one.
///
/// A value with no locking: one task owns it.
struct PinReportDeduplicator: Sendable {
    /// What makes two reports the same.
    struct Key: Hashable, Sendable {
        /// The host connected to.
        var host: String
        /// The port connected to.
        var port: Int
        /// The chain the server sent, as PEM.
        var servedChain: [String]
        /// The chain that was verified, as PEM.
        var validatedChain: [String]
        /// The pins configured.
        var knownPins: [String]
        /// TrustKit's validation result.
        var validationResult: Int

        /// A key from its parts.
        init(
            host: String, port: Int, servedChain: [String], validatedChain: [String], knownPins: [String],
            validationResult: Int
        ) {
            self.host = host
            self.port = port
            self.servedChain = servedChain
            self.validatedChain = validatedChain
            self.knownPins = knownPins
            self.validationResult = validationResult
        }

        /// The key of a report.
        init(_ report: PinFailureReport) {
            self.init(
                host: report.hostname, port: report.port, servedChain: report.servedCertificateChain,
                validatedChain: report.validatedCertificateChain, knownPins: report.knownPins,
                validationResult: report.validationResult)
        }
    }

    /// What to do with a report.
    enum Decision: Sendable, Equatable {
        /// Emit it, with `suppressed` (how many identical reports were held back since the last one emitted;
        /// 0 for the first).
        case emit(suppressed: Int)
        /// Do not emit it; it is counted.
        case suppress
    }

    private struct Entry {
        /// When the last report with this key was emitted.
        var emitted: ContinuousClock.Instant
        var suppressed: Int
    }

    /// How long an emitted report holds back identical ones.
    let window: Duration
    /// How many distinct keys are remembered.
    let capacity: Int
    private var entries: [Key: Entry] = [:]

    /// - Parameters:
    ///   - window: 24 h by default, as TrustKit.
    ///   - capacity: how many distinct reports are remembered; each holds its chains (a few KiB).
    init(window: Duration = .seconds(24 * 3600), capacity: Int = 256) {
        precondition(capacity > 0, "capacity must be positive")
        self.window = window
        self.capacity = capacity
    }

    /// How many keys are remembered.
    var count: Int { entries.count }

    /// Decides on a report with `key` seen at `now`.
    mutating func decide(_ key: Key, now: ContinuousClock.Instant) -> Decision {
        if var entry = entries[key] {
            if entry.emitted.duration(to: now) < window {
                entry.suppressed += 1
                entries[key] = entry
                return .suppress
            }
            entries[key] = Entry(emitted: now, suppressed: 0)
            return .emit(suppressed: entry.suppressed)
        }
        if entries.count >= capacity { makeRoom(now: now) }
        entries[key] = Entry(emitted: now, suppressed: 0)
        return .emit(suppressed: 0)
    }

    /// Drops the keys whose window has passed, or else the one emitted longest ago. O(capacity), and only
    /// when a new key arrives with the table full.
    private mutating func makeRoom(now: ContinuousClock.Instant) {
        entries = entries.filter { $0.value.emitted.duration(to: now) < window }
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.emitted < $1.value.emitted }) {
            entries.removeValue(forKey: oldest.key)
        }
    }
}
