import FoundationEssentials

/// What a handshake under ``RevocationMode/ocsp`` learnt about its leaf: the status, where it came from and
/// until when it stands. What the agent's `probe_ssl_ocsp_status` and `revocation.checked` report.
public struct OCSPCheck: Sendable, Equatable {
    /// The leaf's revocation status as far as OCSP could tell.
    public struct Status: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The name, as written in metrics, events and JSON.
        public var description: String { name }
        /// The responder vouches that the leaf is not revoked.
        public static let good = Status(name: "good")
        /// The leaf is revoked.
        public static let revoked = Status(name: "revoked")
        /// The responder does not know the leaf.
        public static let unknown = Status(name: "unknown")
        /// No usable answer: no responder named, unreachable, or its answer refused.
        public static let unavailable = Status(name: "unavailable")
        /// Every status, in the order metrics list them.
        public static let all: [Status] = [.good, .revoked, .unknown, .unavailable]
    }

    /// The status.
    public let status: Status
    /// The responder's URL the answer came from, or `nil` for the server's staple (or when none was named).
    public let responderURL: URL?
    /// Whether the answer is the server's staple.
    public let stapled: Bool
    /// The answer's nextUpdate: until when the status stands.
    public let nextUpdate: Date?
    /// Why the status is ``Status/unavailable``, or why it failed the handshake; `nil` for a good answer.
    public let detail: String?
    /// Whether the connection went on without a usable answer because the policy allows it
    /// (``SecurityPolicy/ocspSoftFail``): a soft failure, reported, never silent.
    public let softFailed: Bool

    /// The check of an answer (a staple or a responder's).
    init(answer: OCSPStaple, stapled: Bool, detail: String?) {
        switch answer.status {
        case .revoked: status = .revoked
        case .good: status = .good
        default: status = .unknown
        }
        responderURL = answer.responderURL
        self.stapled = stapled
        nextUpdate = answer.nextUpdate
        self.detail = detail
        softFailed = false
    }

    /// The check when no usable answer came.
    init(unavailable detail: String, responderURL: URL?, softFailed: Bool) {
        status = .unavailable
        self.responderURL = responderURL
        stapled = false
        nextUpdate = nil
        self.detail = detail
        self.softFailed = softFailed
    }
}
