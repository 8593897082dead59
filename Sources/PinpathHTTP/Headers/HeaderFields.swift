import PinpathSupport

/// HTTP header fields in the order given, looked up without regard to case (RFC 9110 §5.1).
public struct HeaderFields: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields as given: name and value.
    public var fields: [(name: String, value: String)] { received.map(Self.fields(in:)) ?? given }

    private var given: [(name: String, value: String)] = []
    /// A response's header lines as libcurl delivered them (`Name: value\r\n` each, unparsed), read as fields
    /// only when asked: most responses are never asked for most of their fields, and the header callback then
    /// costs one copy per line. A line without a colon is no field. When set, ``given`` is empty.
    private var received: [UInt8]?

    public init() {}

    /// No field at all.
    var isEmpty: Bool { given.isEmpty && received?.isEmpty != false }

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    /// The first value of `name`, or `nil`.
    public subscript(name: String) -> String? {
        get {
            guard let received else { return given.first { Self.sameName($0.name, name) }?.value }
            return Self.firstValue(named: name, in: received)
        }
        set {
            materialize()
            given.removeAll { Self.sameName($0.name, name) }
            if let newValue { given.append((name, newValue)) }
        }
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        guard let received else { return given.filter { Self.sameName($0.name, name) }.map(\.value) }
        var values: [String] = []
        Self.forEachField(in: received) { field, value in
            if Self.sameName(field, name.utf8) { values.append(String(decoding: value, as: UTF8.self)) }
            return true
        }
        return values
    }

    /// Appends a field, keeping any existing ones of the same name (`Set-Cookie`).
    public mutating func add(name: String, value: String) {
        materialize()
        given.append((name, value))
    }

    /// Appends a header line of a response as its bytes (`Name: value`, its line end included or not).
    mutating func addReceived(line: UnsafeRawBufferPointer) {
        guard received != nil || given.isEmpty else {
            if let (name, value) = Self.field(in: line.bindMemory(to: UInt8.self)[...]) {
                given.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            }
            return
        }
        if received == nil {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(256)  // one allocation for a typical response's fields
            received = bytes
        }
        received!.append(contentsOf: line)
        if line.last != UInt8(ascii: "\n") { received!.append(UInt8(ascii: "\n")) }
    }

    private mutating func materialize() {
        guard let received else { return }
        given = Self.fields(in: received)
        self.received = nil
    }

    private static func fields(in received: [UInt8]) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        forEachField(in: received) { name, value in
            fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }

    private static func firstValue(named wanted: String, in received: [UInt8]) -> String? {
        var found: String?
        forEachField(in: received) { name, value in
            guard sameName(name, wanted.utf8) else { return true }
            found = String(decoding: value, as: UTF8.self)
            return false
        }
        return found
    }

    /// Calls `body` with each received field's name and value until it returns `false`.
    private static func forEachField(in received: [UInt8], _ body: (ArraySlice<UInt8>, ArraySlice<UInt8>) -> Bool) {
        var start = received.startIndex
        while start < received.endIndex {
            let end = received[start...].firstIndex(of: UInt8(ascii: "\n")) ?? received.endIndex
            if let (name, value) = field(in: received[start..<end]), !body(name, value) { return }
            start = end + 1
        }
    }

    /// The name (before the first colon) and the value (after it, without surrounding spaces, tabs and line
    /// ends) of one header line; `nil` for a line without a colon.
    private static func field<Bytes: RandomAccessCollection<UInt8>>(
        in line: Bytes
    ) -> (name: Bytes.SubSequence, value: Bytes.SubSequence)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var start = line.index(after: colon)
        var end = line.endIndex
        while start < end && isSpace(line[start]) { start = line.index(after: start) }
        while end > start && isSpace(line[line.index(before: end)]) { end = line.index(before: end) }
        return (line[..<colon], line[start..<end])
    }

    /// Checks every field for what would corrupt a request: an empty name, a name that is not an RFC 9110
    /// token, and CR, LF or NUL in a value (header injection).
    /// - Throws: ``HTTPError`` `invalidHeader`, naming the field.
    public func validate() throws(HTTPError) {
        for (name, value) in fields {
            guard Self.isToken(name) else {
                throw HTTPError(
                    .invalidHeader,
                    "header name \"\(UntrustedText.escaped(name))\" is not a valid token (letters, digits and !#$%&'*+-.^_`|~ only)")
            }
            if value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) {
                // The value is not quoted: header values are where credentials go.
                throw HTTPError(.invalidHeader, "header \(name): the value contains CR, LF or NUL")
            }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HeaderFields, rhs: HeaderFields) -> Bool {
        // A session's requests share its default fields' storage (the header list cache compares them per request).
        if lhs.received == nil, rhs.received == nil,
            lhs.given.withUnsafeBufferPointer({ $0.baseAddress })
                == rhs.given.withUnsafeBufferPointer({ $0.baseAddress }), lhs.given.count == rhs.given.count
        {
            return true
        }
        return lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// ASCII case-insensitive equality without allocating (field names are tokens: ASCII only).
    private static func sameName(_ lhs: String, _ rhs: String) -> Bool { sameName(lhs.utf8, rhs.utf8) }

    private static func sameName(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        let lower: (UInt8) -> UInt8 = { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
        return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { lower($0) == lower($1) }
    }

    /// Whether `text` is an RFC 9110 token (§5.6.2): a header name, an authentication scheme.
    package static func isToken(_ text: some StringProtocol) -> Bool { !text.isEmpty && text.utf8.allSatisfy(isTokenCharacter) }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        byte.isASCIIAlphanumeric || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

extension UInt8 {
    /// An ASCII letter or digit: the core of header tokens and of unreserved URL characters.
    package var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
