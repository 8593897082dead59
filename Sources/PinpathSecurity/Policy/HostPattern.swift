import Glibc
import PinpathSupport

/// A host name pattern as OkHttp's `CertificatePinner` and TrustKit read them: an exact host, `*.domain`
/// (exactly one more label) or `**.domain` (zero or more labels, so the domain itself too).
/// Matching ignores case and a trailing dot, and is label-aligned: `**.example.co.uk` matches neither
/// `co.uk` nor `anotherexample.co.uk`.
public struct HostPattern: Hashable, Sendable, CustomStringConvertible {
    enum Depth: Hashable, Sendable {
        case exact
        case oneLabel
        case anyLabels
    }

    let depth: Depth
    /// The domain after the wildcard (or the whole host), lowercased, without a trailing dot.
    let domain: String

    /// Parses a pattern.
    /// - Throws: ``SecurityError`` with code `invalidHostPattern` for an empty pattern, an empty label, or a
    ///   `*` anywhere but as the whole first label.
    public init(parsing text: String) throws {
        var host = Self.normalized(text)
        if host.hasPrefix("**.") {
            depth = .anyLabels
            host.removeFirst(3)
        } else if host.hasPrefix("*.") {
            depth = .oneLabel
            host.removeFirst(2)
        } else {
            depth = .exact
        }
        guard !host.isEmpty else {
            throw SecurityError(.invalidHostPattern, "host pattern \"\(text)\" has no domain")
        }
        guard !host.contains("*") else {
            throw SecurityError(
                .invalidHostPattern,
                "host pattern \"\(text)\" has a wildcard that is not the whole first label (use *.domain or **.domain)")
        }
        guard !host.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) else {
            throw SecurityError(.invalidHostPattern, "host pattern \"\(text)\" has an empty label")
        }
        if depth != .exact || !Self.isIPv6Address(host), let bad = host.unicodeScalars.first(where: Self.cannotBeInHostName) {
            // A URL or a host with a port would never match a host, and the policy would silently apply to
            // nothing (OkHttp refuses these characters too).
            let shown =
                bad.properties.generalCategory == .control || bad == " "
                ? "U+\(String(bad.value, radix: 16, uppercase: true))" : "\"\(bad)\""
            throw SecurityError(
                .invalidHostPattern,
                "host pattern \"\(text)\" has \(shown), which no host name has (write the host alone, such as api.example.com)")
        }
        domain = host
    }

    /// ASCII controls, space and the characters that delimit a URL's parts: what OkHttp's
    /// `containsInvalidHostnameAsciiCodes` refuses.
    private static func cannotBeInHostName(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F || " #%/:?@[\\]".unicodeScalars.contains(scalar)
    }

    /// `::1`, `fe80::1%eth0`: an IPv6 address (the request command pins the URL's host, brackets removed),
    /// with a zone that is an interface name.
    private static func isIPv6Address(_ host: String) -> Bool {
        let parts = host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 {
            let zone = parts[1].unicodeScalars
            guard !zone.isEmpty,
                zone.allSatisfy({
                    $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
                })
            else {
                return false
            }
        }
        // inet_pton reads a C string: a NUL would end the address early (`::\0junk` read as `::`).
        guard parts[0].utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return false }
        var bytes = in6_addr()
        return inet_pton(AF_INET6, String(parts[0]), &bytes) == 1
    }

    /// Whether `host` matches; `includeSubdomains` widens an exact pattern to its subdomains (TrustKit).
    public func matches(_ host: String, includeSubdomains: Bool = false) -> Bool {
        let host = Self.normalized(host)
        switch depth {
        case .exact:
            return host == domain || (includeSubdomains && host.hasSuffix("." + domain))
        case .oneLabel:
            guard host.hasSuffix("." + domain) else { return false }
            let label = host.dropLast(domain.count + 1)
            return !label.isEmpty && (includeSubdomains || !label.contains("."))
        case .anyLabels:
            return host == domain || host.hasSuffix("." + domain)
        }
    }

    /// The pattern as written, normalized (`**.example.com`).
    public var description: String {
        switch depth {
        case .exact: return domain
        case .oneLabel: return "*." + domain
        case .anyLabels: return "**." + domain
        }
    }

    private static func normalized(_ host: String) -> String { canonicalHost(host) }

    /// A host in the one spelling that names it: lowercased, without a trailing dot or IPv6 brackets, and an IP
    /// address in canonical form (`0:0::1` is `::1`, `::ffff:127.0.0.1` and `127.1` are `127.0.0.1`, as libcurl
    /// and the kernel read them). Hosts are compared in this form wherever a policy is chosen, so that a
    /// redirect cannot spell a pinned address another way and be held to no policy.
    public static func canonicalHost(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        host = URLHost.withoutBrackets(host)
        return canonicalAddress(host) ?? host
    }

    /// The canonical text of an IP address, or `nil` when `text` is not one. IPv4 in any form `inet_aton`
    /// reads (the forms libcurl's URL parser normalizes: `127.1`, `0x7f.0.0.1`, `2130706433`); IPv6 by
    /// `inet_pton`, an IPv4-mapped address as its IPv4 address. Wraps `inet_pton` and `inet_aton`.
    static func canonicalAddress(_ text: String) -> String? {
        if text.utf8.contains(UInt8(ascii: ":")) {
            var address = in6_addr()
            guard text.utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                inet_pton(AF_INET6, text, &address) == 1
            else { return nil }
            let bytes = withUnsafeBytes(of: address) { Array($0) }
            let mapped = bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF
            return (mapped ? bytes[12...] : bytes[...]).withUnsafeBytes(ipAddressText)
        }
        guard let first = text.utf8.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
            text.utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "x") })
        else { return nil }
        var address = in_addr()
        guard inet_aton(text, &address) != 0 else { return nil }
        return withUnsafeBytes(of: address, ipAddressText)
    }

    /// An ASCII hexadecimal digit. Checked on UTF-8 bytes (a byte of a non-ASCII character is never one): every
    /// host a policy is chosen for passes here, on each probe, and Unicode property look-ups cost ten times more.
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}
