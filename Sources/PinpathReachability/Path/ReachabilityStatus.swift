/// Whether something can be reached.
public enum ReachabilityStatus: String, Sendable, Equatable, Codable {
    case reachable
    case unreachable = "unreachable"
}
