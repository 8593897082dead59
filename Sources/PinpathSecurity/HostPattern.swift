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
        domain = host
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

    private static func normalized(_ host: String) -> String {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return host
    }
}
