/// One watched target changed.
public struct TargetChange: Sendable, Equatable {
    public var target: TargetReachability
    /// `nil` for the initial state or a newly added target.
    public var previous: TargetReachability?
    public var reason: ChangeReason
    /// The machine-wide path at the time of the change.
    public var path: NetworkPath
}
