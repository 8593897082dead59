/// A target to watch: a numeric address, or a host name to resolve.
public enum ReachabilityTarget: Sendable, Hashable, CustomStringConvertible {
    case address(IPAddress)
    case host(String)

    /// Parses what a user typed: an IPv4/IPv6 literal (brackets allowed) or a DNS host name (RFC 1123 labels).
    /// - Throws: `ReachabilityError` with code `.invalidTarget`, naming the input and what is wrong.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingWhitespace
        if let address = IPAddress(trimmed) {
            self = .address(address)
            return
        }
        if let problem = Self.hostNameProblem(trimmed) {
            throw ReachabilityError(.invalidTarget, "\"\(text)\" is not an IP address or host name: \(problem)")
        }
        self = .host(trimmed.hasSuffix(".") ? String(trimmed.dropLast()) : trimmed)
    }

    public var description: String {
        switch self {
        case .address(let address): return address.description
        case .host(let name): return name
        }
    }

    private static func hostNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.contains("://") { return "give a host, not a URL" }
        let body = name.hasSuffix(".") ? String(name.dropLast()) : name
        if body.utf8.count > 253 { return "it is longer than 253 characters" }
        for label in body.split(separator: ".", omittingEmptySubsequences: false) {
            if label.isEmpty { return "it has an empty label" }
            if label.utf8.count > 63 { return "the label \"\(label)\" is longer than 63 characters" }
            if label.first == "-" || label.last == "-" { return "the label \"\(label)\" starts or ends with '-'" }
            if let bad = label.unicodeScalars.first(where: { !($0.isASCIILetterOrDigit || $0 == "-" || $0 == "_") }) {
                return "it contains \"\(bad.escaped(asASCII: true))\""
            }
        }
        if body.split(separator: ".").last?.allSatisfy(\.isNumber) == true {
            return "it looks like an IP address but is not a valid one"
        }
        return nil
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetterOrDigit: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || ("0"..."9").contains(self)
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
