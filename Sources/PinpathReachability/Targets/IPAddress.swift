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
        // Contiguous bytes (a netlink attribute) are loaded as words, not shifted in one at a time.
        let words = bytes.withContiguousStorageIfAvailable { buffer -> (UInt64, UInt64) in
            let raw = UnsafeRawBufferPointer(buffer)
            if raw.count == 4 { return (UInt64(UInt32(bigEndian: raw.loadUnaligned(as: UInt32.self))) << 32, 0) }
            let high = raw.loadUnaligned(as: UInt64.self)
            return (UInt64(bigEndian: high), UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
        if let words {
            (self.high, self.low) = words
            return
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
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        appendBytes(to: &bytes)
        return bytes
    }

    /// Appends the network-order bytes to `buffer` without making an array of them (route requests are
    /// built this way on every netlink event).
    func appendBytes(to buffer: inout [UInt8]) {
        withUnsafeBytes(of: high.bigEndian) { buffer.append(contentsOf: family == .ipv4 ? UnsafeRawBufferPointer(rebasing: $0[..<4]) : $0) }
        if family == .ipv6 { withUnsafeBytes(of: low.bigEndian) { buffer.append(contentsOf: $0) } }
    }

    /// 4 for IPv4, 16 for IPv6.
    var byteCount: Int { family == .ipv4 ? 4 : 16 }

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
        if family == .ipv4 {
            // By hand: glibc's inet_ntop formats IPv4 through sprintf, and event lines print gateways.
            var text: [UInt8] = []
            text.reserveCapacity(15)
            for index in 0..<4 {
                if index > 0 { text.append(UInt8(ascii: ".")) }
                let byte = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
                if byte >= 100 { text.append(UInt8(ascii: "0") + byte / 100) }
                if byte >= 10 { text.append(UInt8(ascii: "0") + byte / 10 % 10) }
                text.append(UInt8(ascii: "0") + byte % 10)
            }
            return String(decoding: text, as: UTF8.self)
        }
        let bytes = (high.bigEndian, low.bigEndian)
        return withUnsafeBytes(of: bytes) { bytes in
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { output in
                guard inet_ntop(AF_INET6, bytes.baseAddress, output.baseAddress, socklen_t(output.count)) != nil else {
                    return "?"
                }
                return String(cString: output.baseAddress!)
            }
        }
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
