import Glibc

/// An IPv4 or IPv6 address, as the kernel reports it.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public let family: IPFamily
    /// Network-order bytes: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// Creates an address from network-order bytes; `nil` unless there are 4 or 16 of them.
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: family = .ipv4
        case 16: family = .ipv6
        default: return nil
        }
        self.bytes = bytes
    }

    /// Parses a numeric IPv4 or IPv6 address (`inet_pton`); `nil` for anything else, host names included.
    /// A bracketed IPv6 literal (`[::1]`) is accepted, as in URLs.
    public init?(_ text: String) {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        var buffer = [UInt8](repeating: 0, count: 16)
        let string = String(text)
        if inet_pton(AF_INET, string, &buffer) == 1 {
            self.init(bytes: Array(buffer.prefix(4)))
        } else if inet_pton(AF_INET6, string, &buffer) == 1 {
            self.init(bytes: buffer)
        } else {
            return nil
        }
    }

    /// The conventional text form (`inet_ntop`): `192.0.2.1`, `2001:db8::1`.
    public var description: String {
        var output = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let af = family == .ipv4 ? AF_INET : AF_INET6
        guard inet_ntop(af, bytes, &output, socklen_t(output.count)) != nil else { return "?" }
        return String(cString: output)
    }
}

/// An IP address family.
public enum IPFamily: String, Sendable, Hashable, CaseIterable, Codable {
    case ipv4
    case ipv6

    var addressFamily: Int32 { self == .ipv4 ? AF_INET : AF_INET6 }

    init?(addressFamily: Int32) {
        switch addressFamily {
        case AF_INET: self = .ipv4
        case AF_INET6: self = .ipv6
        default: return nil
        }
    }
}
