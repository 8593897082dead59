/// Whether something can be reached.
public enum ReachabilityStatus: String, Sendable, Equatable, Codable {
    case reachable
    case notReachable = "not_reachable"
}
