import PinpathReachability
import PinpathSecurity
import PinpathYAML

/// A module's `targets:`: the targets its probes may reach. Host patterns (`api.example.com`, `*.example.com`,
/// `**.example.com`, as `policies.hosts` writes them) are matched against the target's host as written; address
/// ranges (`10.0.0.0/8`, `2001:db8::/32`, or one address) against every address the host resolves to.
package struct TargetAllowList: Sendable, Equatable {
    /// The host patterns, in file order.
    package let hosts: [HostPattern]
    /// The address ranges, in file order.
    package let networks: [IPNetwork]

    /// Whether `host` (as the target writes it) matches one of the patterns.
    func admitsHost(_ host: String) -> Bool { hosts.contains { $0.matches(host) } }

    /// Whether `address` (an IPv4-mapped address as its IPv4 form) is in one of the ranges.
    func admitsAddress(_ address: IPAddress) -> Bool { networks.contains { $0.contains(address) } }
}

/// An address range, `ADDRESS/LENGTH` (CIDR); one address stands for itself (`/32`, `/128`).
package struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    package let address: IPAddress
    package let prefixLength: Int

    /// Parses `ADDRESS/LENGTH` or `ADDRESS`; `nil` for anything else (a host name).
    /// - Throws: a message naming the text when it is a range with a bad length or address.
    init?(parsing text: String) throws(TargetAllowList.EntryError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else {
            guard parts.count == 1 else {
                throw .init(
                    message: "\(ConfigurationProblem.quoted(text)) is not an address range: \(parts[0]) is not an IPv4 or IPv6 address")
            }
            return nil
        }
        let width = address.family == .ipv4 ? 32 : 128
        let length = parts.count == 2 ? Int(parts[1]) : width
        guard let length, (0...width).contains(length) else {
            throw .init(message: "\(ConfigurationProblem.quoted(text)) is not an address range: the length must be 0 to \(width)")
        }
        guard IPNetwork.masked(address, length) == address else {
            throw .init(
                message: """
                    \(ConfigurationProblem.quoted(text)) has bits set after its first \(length): write \(IPNetwork.masked(address, length))/\(length)
                    """)
        }
        self.address = address
        self.prefixLength = length
    }

    init(_ address: IPAddress, _ prefixLength: Int) {
        self.address = address
        self.prefixLength = prefixLength
    }

    /// Whether `address` is in the range; an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is judged as its IPv4
    /// form, which is where it connects.
    func contains(_ address: IPAddress) -> Bool { address.unmapped.isWithin(self.address, prefixLength: prefixLength) }

    /// `address` with the bits after the first `length` cleared.
    private static func masked(_ address: IPAddress, _ length: Int) -> IPAddress {
        let bytes = address.bytes.enumerated().map { index, byte -> UInt8 in
            let kept = min(max(length - index * 8, 0), 8)
            return kept == 8 ? byte : byte & ~(UInt8(0xFF) >> kept)
        }
        return IPAddress(bytes: bytes) ?? address
    }

    package var description: String { "\(address)/\(prefixLength)" }
}

extension IPAddress {
    /// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for; any other address itself.
    var unmapped: IPAddress {
        let bytes = self.bytes
        guard family == .ipv6, bytes.prefix(10).allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff else { return self }
        return IPAddress(bytes: bytes.suffix(4)) ?? self
    }
}

extension TargetAllowList {
    /// Why an entry of `targets:` cannot be read.
    struct EntryError: Error {
        let message: String
    }

    /// Reads `targets:`: a list of host patterns and address ranges; `nil` after reporting its problems.
    init?(reading node: Node, at keyPath: String, _ decoder: ConfigurationDecoder) {
        guard let items = decoder.list(node, keyPath, of: "host patterns and address ranges") else { return nil }
        let before = decoder.problems.count
        var hosts: [HostPattern] = []
        var networks: [IPNetwork] = []
        for (index, item) in items.enumerated() {
            let path = "\(keyPath)[\(index)]"
            guard let text = decoder.string(item, path, "a host pattern or an address range") else { continue }
            do throws(EntryError) {
                if let network = try IPNetwork(parsing: text) {
                    networks.append(network)
                    continue
                }
            } catch {
                decoder.report(.invalidValue, at: item, path, error.message)
                continue
            }
            if let pattern = decoder.parse(item, path, "a host pattern", { try HostPattern(parsing: $0) }) { hosts.append(pattern) }
        }
        if items.isEmpty {
            decoder.report(
                .invalidValue, at: node, keyPath,
                "an empty list admits no target; list host patterns or address ranges, or remove targets: for the default refusals")
        }
        guard decoder.problems.count == before else { return nil }
        self.init(hosts: hosts, networks: networks)
    }
}
