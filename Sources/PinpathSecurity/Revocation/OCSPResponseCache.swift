import FoundationEssentials
import Synchronization

/// OCSP answers fetched from responders, by the CertID they are about, so that repeated handshakes with the
/// same leaf do not ask its responder every time (a responder's answer stands until its nextUpdate). Bounded:
/// when full, expired entries go first, then those that expire soonest. Shared by the handshakes of a
/// ``HandshakeVerifier``'s owner (a session); safe from any thread.
public final class OCSPResponseCache: Sendable {
    /// What is known about one CertID.
    enum Entry: Sendable {
        /// A response that verified (it may say good, revoked or unknown).
        case answer(OCSPStaple)
        /// No usable answer came (unreachable, refused, oversized, forged, stale): the message says why.
        case unavailable(String)
    }

    private struct Stored {
        let entry: Entry
        let expires: Date
    }

    /// How long a failure to get an answer is remembered: long enough that a probe's retry and the next few
    /// probes do not hammer a dead responder, short enough that a recovered one is asked again soon.
    static let unavailableLifetime: TimeInterval = 60
    /// The most CertIDs kept.
    public let capacity: Int
    private let stored = Mutex<[String: Stored]>([:])

    /// Creates an empty cache holding at most `capacity` answers.
    public init(capacity: Int = 1024) { self.capacity = max(1, capacity) }

    /// How many CertIDs have an entry (expired ones included until they are dropped).
    public var count: Int { stored.withLock { $0.count } }

    /// Judges a responder's reply to `query` (``OCSPStaple``, nonce included) and keeps the outcome for the
    /// handshakes that follow: a verified answer, or why there is none.
    package func record(_ reply: Result<[UInt8], OCSPResponderFailure>, for query: OCSPQuery, now: Date) {
        store(query.entry(for: reply, now: now), for: query.certificateID, now: now)
    }

    /// The entry for `certificateID` still valid at `now`, or `nil`.
    func entry(for certificateID: String, now: Date) -> Entry? {
        stored.withLock { entries in
            guard let found = entries[certificateID] else { return nil }
            guard found.expires > now else {
                entries[certificateID] = nil
                return nil
            }
            return found.entry
        }
    }

    /// Keeps `entry` for `certificateID`: an answer until its nextUpdate (or ``OCSPStaple/maximumAgeWithoutNextUpdate``
    /// after its thisUpdate when it has none), a failure for ``unavailableLifetime``.
    func store(_ entry: Entry, for certificateID: String, now: Date) {
        let expires: Date
        switch entry {
        case .answer(let answer):
            expires =
                answer.nextUpdate
                ?? (answer.thisUpdate ?? now).addingTimeInterval(TimeInterval(OCSPStaple.maximumAgeWithoutNextUpdate))
        case .unavailable:
            expires = now.addingTimeInterval(Self.unavailableLifetime)
        }
        guard expires > now else { return }
        stored.withLock { entries in
            if entries[certificateID] == nil, entries.count >= capacity {
                for (key, value) in entries where value.expires <= now { entries[key] = nil }
                if entries.count >= capacity, let soonest = entries.min(by: { $0.value.expires < $1.value.expires }) {
                    entries[soonest.key] = nil
                }
            }
            entries[certificateID] = Stored(entry: entry, expires: expires)
        }
    }
}
