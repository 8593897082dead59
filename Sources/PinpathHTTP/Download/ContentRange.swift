/// A `Content-Range` field of a response (RFC 9110 §14.4), in the two forms a download accepts:
/// `bytes FIRST-LAST/LENGTH` (a 206's part) and `bytes */LENGTH` (a 416's "the file is this long").
///
/// Parsed strictly: digits only (no sign, no space inside a number, at most 18 digits), `FIRST ≤ LAST < LENGTH`;
/// an unknown length (`/*`) is not accepted, since a resumed part must prove where it ends.
struct ContentRange: Equatable, Sendable {
    /// The first and last byte positions of the part; `nil` for `bytes */LENGTH`.
    var range: ClosedRange<Int64>?
    /// The whole representation's length.
    var length: Int64

    /// Parses the field's value; `nil` when it is not one of the two forms.
    init?(parsing text: String) {
        var rest = Substring(text.trimmingSpacesAndTabs)
        guard rest.count > 6, rest.prefix(6).lowercased() == "bytes " else { return nil }
        rest = rest.dropFirst(6).drop { $0 == " " }
        guard let slash = rest.firstIndex(of: "/"), let length = Self.number(rest[rest.index(after: slash)...]), length > 0
        else { return nil }
        let part = rest[..<slash]
        if part == "*" {
            range = nil
        } else {
            guard let dash = part.firstIndex(of: "-"), let first = Self.number(part[..<dash]),
                let last = Self.number(part[part.index(after: dash)...]), first <= last, last < length
            else { return nil }
            range = first...last
        }
        self.length = length
    }

    init(range: ClosedRange<Int64>?, length: Int64) {
        self.range = range
        self.length = length
    }

    /// A non-negative decimal number of 1 to 18 digits (below 10^18: no overflow).
    private static func number(_ text: Substring) -> Int64? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (a field value's optional white space).
    fileprivate var trimmingSpacesAndTabs: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
