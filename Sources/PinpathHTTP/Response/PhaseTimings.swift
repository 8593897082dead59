/// Time spent in each phase of one request, as blackbox_exporter splits it: resolve, connect (TCP), tls
/// (handshake), processing (request sent → first response byte), transfer (first byte → last). Seconds.
public struct PhaseTimings: Sendable, Equatable {
    public var resolve: Double = 0
    public var connect: Double = 0
    public var tls: Double = 0
    public var processing: Double = 0
    public var transfer: Double = 0
    /// The whole request, redirects included.
    public var total: Double = 0
    /// The phases a failed request reached (`resolve`, `connect`, `tls`), in order; `nil` when a response
    /// arrived and every phase of its kind counts.
    public var phasesReached: [String]?

    public init() {}
}
