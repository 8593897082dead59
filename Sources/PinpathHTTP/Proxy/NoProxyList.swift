import PinpathReachability
import PinpathSecurity
import PinpathSupport

/// The hosts a request reaches without a proxy, as the `no_proxy` variable writes them, matched by the rules of
/// libcurl 7.88 (Debian 12's curl, `lib/noproxy.c`) so that pinpath and the `curl` command send the same hosts
/// through the proxy:
/// - `*` as the whole value matches every host; a `*` among other entries, or with spaces around it, matches none.
/// - Entries are separated by commas, spaces or tabs, in any mix (`a.test b.test`, `a.test, b.test`); any other
///   character, a newline included, is part of an entry.
/// - A host name matches an entry naming it or one of its parent domains, ASCII letters compared without case; one
///   trailing dot of the host, and one trailing then one leading dot of the entry, are ignored (`.example.com`
///   matches `example.com` and `www.example.com`, never `notexample.com`).
/// - An IPv4 host (in any form libcurl's URL parser reads: `127.1` and `2130706433` are `127.0.0.1`) matches an
///   address entry, or a `network/bits` entry whose first bits agree. The bits are read as C's `atoi` reads them
///   (`/8x` is 8; `/0`, `/` or `/x` compare the whole address; more than 32 matches nothing). Nothing is looked
///   up: a name never matches an address entry, nor an address a name entry.
/// - Ports are not part of the match: an entry with one (`example.com:8080`) matches no host.
/// - IPv6, the one difference, on purpose: libcurl 7.88 compares an IPv6 host as text, so `::1` matches `[::1]`
///   but `fd00::/64` matches nothing. pinpath reads both as addresses, as curl does since 8.18 ("noproxy: fix
///   ipv6 handling"), so `fd00::/64` matches `[fd00::5]` (bits as for IPv4, `/0` being `/128`).
public struct NoProxyList: Sendable, Hashable, CustomStringConvertible {
    /// The value as written.
    public let text: String
    /// The entries, as split at commas, spaces and tabs.
    public let entries: [String]

    /// Reads `text`, a `no_proxy` value.
    public init(_ text: String) {
        self.text = text
        // Split on scalars, as curl splits on bytes: a comma followed by a combining mark is one `Character`.
        entries = text.unicodeScalars.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map {
            String(String.UnicodeScalarView($0))
        }
    }

    /// No host is reached directly.
    public static let none = NoProxyList("")

    /// Whether no host is listed.
    public var isEmpty: Bool { entries.isEmpty }

    /// The entries as a comma-separated list, escaped for a terminal (they come from the environment), with a
    /// note when a `*` among them matches nothing.
    public var description: String {
        let list = UntrustedText.escaped(entries.joined(separator: ","))
        return !matchesEveryHost && entries.contains("*") ? list + " (a * among other entries matches no host)" : list
    }

    /// Whether the value is `*` alone.
    private var matchesEveryHost: Bool { text == "*" }

    /// Whether a request to `host` (a URL's host, IPv6 in brackets or not) goes without a proxy.
    public func matches(host: String) -> Bool {
        if matchesEveryHost { return true }
        guard !entries.isEmpty, !host.isEmpty else { return false }
        switch Self.classify(URLHost.withoutBrackets(host)) {
        case .address(let address):
            return entries.contains { Self.entry($0, matchesAddress: address) }
        case .name(let name):
            return entries.contains { Self.entry(Array($0.utf8), matchesName: name) }
        }
    }

    private enum Host {
        case address(IPAddress)
        /// The name's UTF-8, without one trailing dot.
        case name([UInt8])
    }

    private static func classify(_ host: String) -> Host {
        if host.contains(":") {
            if let address = IPAddress(host), address.family == .ipv6 { return .address(address) }
        } else if !host.hasSuffix("."), let address = IPAddress(HostPattern.canonicalHost(host)), address.family == .ipv4 {
            // libcurl's URL parser turns `127.1`, `0x7f.0.0.1` and `2130706433` into `127.0.0.1` before the match.
            return .address(address)
        }
        var name = Array(host.utf8)
        if name.last == UInt8(ascii: ".") { name.removeLast() }
        return .name(name)
    }

    /// curl's name rule: the entry (without one trailing, then one leading dot) is the name, or its tail after a dot.
    private static func entry(_ entry: [UInt8], matchesName name: [UInt8]) -> Bool {
        var token = entry[...]
        if token.last == UInt8(ascii: ".") { token.removeLast() }
        if token.first == UInt8(ascii: ".") { token.removeFirst() }
        if token.count == name.count { return equalIgnoringASCIICase(token, name[...]) }
        guard token.count < name.count, name[name.count - token.count - 1] == UInt8(ascii: ".") else { return false }
        return equalIgnoringASCIICase(token, name[(name.count - token.count)...])
    }

    private static func equalIgnoringASCIICase(_ lhs: ArraySlice<UInt8>, _ rhs: ArraySlice<UInt8>) -> Bool {
        func lowered(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { lowered($0) == lowered($1) }
    }

    /// curl's address rule: `address` or `network/bits` (bits read by ``leadingInteger(_:)``) of the host's family.
    private static func entry(_ entry: String, matchesAddress address: IPAddress) -> Bool {
        // curl copies the entry into a 128-byte buffer first; a longer one cannot match.
        guard entry.utf8.count < 128, !entry.hasPrefix("[") else { return false }
        let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let width = address.family == .ipv4 ? 32 : 128
        var bits = parts.count == 2 ? leadingInteger(parts[1]) : 0
        if bits == 0 { bits = width }
        guard (1...width).contains(bits), let network = IPAddress(String(parts[0])), network.family == address.family else { return false }
        return address.isWithin(network, prefixLength: bits)
    }

    /// The number C's `atoi` reads at the start of `text`: after white space, an optional sign and digits; 0 when
    /// there are none; a value past `Int32` is taken as too large (`Int.max`), which no prefix length is.
    static func leadingInteger(_ text: Substring) -> Int {
        var scalars = text.unicodeScalars.drop { " \t\n\u{0B}\u{0C}\r".unicodeScalars.contains($0) }[...]
        var sign = 1
        if let first = scalars.first, first == "+" || first == "-" {
            sign = first == "-" ? -1 : 1
            scalars = scalars.dropFirst()
        }
        var value = 0
        for scalar in scalars {
            guard ("0"..."9").contains(scalar) else { break }
            value = value * 10 + Int(scalar.value - 48)
            if value > Int(Int32.max) { return Int.max }
        }
        return sign * value
    }
}
