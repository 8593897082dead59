import Glibc
import PinpathSupport

/// An IPv4 or IPv6 address, as the kernel reports it.
///
/// Stored inline (two words, no heap array): addresses are hashed and compared on every netlink event.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public let family: IPFamily
    /// The bytes in network order, packed big-endian: IPv6 uses both words, IPv4 the top half of `high`.
    private let high: UInt64
    private let low: UInt64

    /// Creates an address from network-order bytes; `nil` unless there are 4 or 16 of them.
    public init?<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        switch bytes.count {
        case 4: family = .ipv4
        case 16: family = .ipv6
        default: return nil
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 {
                high |= UInt64(byte) << (56 - 8 * index)
            } else {
                low |= UInt64(byte) << (56 - 8 * (index - 8))
            }
        }
        self.high = high
        self.low = low
    }

    /// Network-order bytes: 4 for IPv4, 16 for IPv6.
    public var bytes: [UInt8] {
        let count = family == .ipv4 ? 4 : 16
        return (0..<count).map { index in
            UInt8(truncatingIfNeeded: index < 8 ? high >> (56 - 8 * index) : low >> (56 - 8 * (index - 8)))
        }
    }

    /// Whether this address is in `network`/`prefixLength` (`192.0.2.7` is in `192.0.2.0`/24): the same family,
    /// and the first `prefixLength` bits agree. A length past the family's width compares the whole address.
    public func isWithin(_ network: IPAddress, prefixLength: Int) -> Bool {
        guard network.family == family else { return false }
        // An IPv4 address sits at the top of `high`, so for both families the first bits are the top of (high, low);
        // `<<` past the width gives 0, an empty mask.
        let bits = max(0, prefixLength)
        let highMask = ~UInt64(0) << (64 - min(bits, 64))
        let lowMask = ~UInt64(0) << (64 - min(max(bits - 64, 0), 64))
        return (high ^ network.high) & highMask == 0 && (low ^ network.low) & lowMask == 0
    }

    /// IPv4 before IPv6, then numerically: the order `ip addr` lists addresses in.
    static func < (lhs: IPAddress, rhs: IPAddress) -> Bool {
        (lhs.family == .ipv4 ? 0 : 1, lhs.high, lhs.low) < (rhs.family == .ipv4 ? 0 : 1, rhs.high, rhs.low)
    }

    /// Parses a numeric IPv4 or IPv6 address (`inet_pton`); `nil` for anything else, host names included.
    /// A bracketed IPv6 literal (`[::1]`) is accepted, as in URLs.
    public init?(_ text: String) {
        var buffer = [UInt8](repeating: 0, count: 16)
        let string = URLHost.withoutBrackets(text)
        if inet_pton(AF_INET, string, &buffer) == 1 {
            self.init(bytes: buffer.prefix(4))
        } else if inet_pton(AF_INET6, string, &buffer) == 1 {
            self.init(bytes: buffer)
        } else {
            return nil
        }
    }

    /// The conventional text form (`inet_ntop`): `192.0.2.1`, `2001:db8::1`.
    public var description: String {
        let bytes = self.bytes
        var output = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let af = family == .ipv4 ? AF_INET : AF_INET6
        guard inet_ntop(af, bytes, &output, socklen_t(output.count)) != nil else { return "?" }
        return output.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
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
