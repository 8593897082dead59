/// HTTP header fields in the order given, looked up without regard to case (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields as given: name and value.
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    /// The first value of `name`, or `nil`.
    public subscript(name: String) -> String? {
        get { fields.first { Self.sameName($0.name, name) }?.value }
        set {
            fields.removeAll { Self.sameName($0.name, name) }
            if let newValue { fields.append((name, newValue)) }
        }
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Appends a field, keeping any existing ones of the same name (`Set-Cookie`).
    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    /// Checks every field for what would corrupt a request: an empty name, a name that is not an RFC 9110
    /// token, and CR, LF or NUL in a value (header injection).
    /// - Throws: ``HTTPError`` `invalidHeader`, naming the field.
    public func validate() throws(HTTPError) {
        for (name, value) in fields {
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isTokenCharacter) else {
                throw HTTPError(
                    .invalidHeader, "header name \"\(name.debugEscaped)\" is not a valid token (letters, digits and !#$%&'*+-.^_`|~ only)")
            }
            if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
                // The value is not quoted: header values are where credentials go.
                throw HTTPError(.invalidHeader, "header \(name): the value contains CR, LF or NUL")
            }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// ASCII case-insensitive equality without allocating (field names are tokens: ASCII only).
    private static func sameName(_ lhs: String, _ rhs: String) -> Bool {
        let lower: (UInt8) -> UInt8 = { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        return lhs.utf8.count == rhs.utf8.count && zip(lhs.utf8, rhs.utf8).allSatisfy { lower($0) == lower($1) }
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        byte.isASCIIAlphanumeric || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

extension UInt8 {
    /// An ASCII letter or digit: the core of header tokens and of unreserved URL characters.
    var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}

extension String {
    /// The text with control characters shown as escapes, for error messages.
    var debugEscaped: String {
        String(unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }.joined())
    }
}
