/// An address assigned to an interface, with its prefix length.
public struct InterfaceAddress: Sendable, Hashable, CustomStringConvertible {
    public var address: IPAddress
    public var prefixLength: Int
    public var description: String { "\(address)/\(prefixLength)" }
}
