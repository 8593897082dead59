/// The machine-wide path changed.
public struct PathChange: Sendable, Equatable {
    public var path: NetworkPath
    /// `nil` for the initial state.
    public var previous: NetworkPath?
    public var reason: ChangeReason
}
