/// How one address family leaves the machine: the kernel's answer for an internet destination.
public struct FamilyPath: Sendable, Equatable {
    /// The egress interface's index and name.
    public var interfaceIndex: Int
    public var interfaceName: String
    /// The next hop, or `nil` for an on-link (point-to-point, VPN) route.
    public var gateway: IPAddress?
    /// The source address the kernel would choose.
    public var source: IPAddress?
    /// The routing table the answer came from (254 is `main`; wg-quick uses 51820).
    public var table: UInt32
}
