import PinpathHTTP
import PinpathSerialization
import PinpathSupport

/// The query-string serializer (``QueryString``) on parameters built from the fuzz bytes.
///
/// Promises checked: the output is only unreserved characters, `%XX` escapes, `=` and `&`; it splits back into
/// exactly ``QueryString/pairs(_:)`` (every key and value percent-decodes to itself, so no `=`, `&` or UTF-8
/// sequence was lost or split); and where AFNetworking's format can be read back unambiguously (no brackets in
/// keys, no empty nested keys, arrays of scalars only) it reads back into the parameters themselves, keys
/// in UTF-16 order at every level, empty arrays and dictionaries left out.
enum QueryStringCheck {
    static func check(_ bytes: [UInt8]) throws(InvariantViolation) {
        var input = FuzzBytes(bytes)
        let parameters = self.parameters(&input)
        let encoded = QueryString.encode(parameters)
        let pairs = QueryString.pairs(parameters)
        let context = "parameters \(excerpt(String(describing: parameters))) gave \(excerpt(encoded))"

        try require(encoded.utf8.allSatisfy(isAllowed), "\(context): a character that is neither unreserved, an escape, = nor &")
        guard !pairs.isEmpty else {
            try require(encoded.isEmpty, "\(context): no pairs, yet a query string")
            return
        }
        let components = encoded.split(separator: "&", omittingEmptySubsequences: false)
        try require(components.count == pairs.count, "\(context): \(components.count) components for \(pairs.count) pairs")
        var decoded: [(key: String, value: String?)] = []
        for (component, pair) in zip(components, pairs) {
            let parts = component.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = percentDecoded(parts[0])
            let value = parts.count == 2 ? percentDecoded(parts[1]) : nil
            try require(
                key.map { Array($0.utf8) } == Array(pair.key.utf8),
                "\(context): key \(excerpt(String(parts[0]))) decodes to \(String(describing: key)), not \(excerpt(pair.key))")
            try require(
                (parts.count == 2) == (pair.value != nil) && value.map { Array($0.utf8) } == pair.value.map { Array($0.utf8) },
                "\(context): \(excerpt(String(component))) does not decode to the value \(String(describing: pair.value))")
            decoded.append((pair.key, value))
        }
        if isReadableBack(.object(parameters), nested: false) {
            var rebuilt = RebuiltValue.table([:], lastKey: nil)
            for pair in decoded { try rebuilt.insert(pair, context: context) }
            try require(rebuilt.matches(pruned(.object(parameters))), "\(context): reads back as \(rebuilt), not as the parameters")
        }
    }

    // MARK: Building parameters

    /// Characters that matter to the format (delimiters, brackets, escapes), plain ones, and multi-byte ones.
    static let alphabet: [Unicode.Scalar] = Array("ab Z09-._~/?[]=&%+#:;,@!$'()*\"\\\n\t\0éß€😀\u{301}\u{FEFF}".unicodeScalars)

    static func parameters(_ input: inout FuzzBytes) -> Parameters {
        var parameters: Parameters = [:]
        for _ in 0..<input.number(below: 6) {
            parameters[input.string(maximumLength: 6, alphabet: alphabet)] = value(&input, depth: 1)
        }
        return parameters
    }

    static func value(_ input: inout FuzzBytes, depth: Int) -> JSONValue {
        switch input.number(below: depth < 4 ? 9 : 7) {
        case 0: return .null
        case 1: return .bool(input.bool())
        case 2: return .int(Int(truncatingIfNeeded: input.word()))
        case 3: return .int(input.number(below: 256) - 128)
        case 4: return .double(Double(bitPattern: input.word()))
        case 5, 6: return .string(input.string(maximumLength: 12, alphabet: alphabet))
        case 7: return .array((0..<input.number(below: 4)).map { _ in value(&input, depth: depth + 1) })
        default:
            var entries: [String: JSONValue] = [:]
            for _ in 0..<input.number(below: 4) {
                entries[input.string(maximumLength: 4, alphabet: alphabet)] = value(&input, depth: depth + 1)
            }
            return .object(entries)
        }
    }

    // MARK: Reading the output back

    private static func isAllowed(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || "-._~/?%=&".utf8.contains(byte)
    }

    /// Strict percent-decoding: `%` must start two uppercase hex digits, and the bytes must be UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Whether AFNetworking's format names every value unambiguously: `a[]` must mean an array (so no empty
    /// nested key), brackets in a key would read as nesting, and `a[][b]` could be one dictionary or several.
    static func isReadableBack(_ value: JSONValue, nested: Bool) -> Bool {
        switch value {
        case .object(let entries):
            return entries.allSatisfy { key, value in
                !key.unicodeScalars.contains { $0 == "[" || $0 == "]" } && (!nested || !key.isEmpty)
                    && isReadableBack(value, nested: true)
            }
        case .array(let elements):
            return elements.allSatisfy { if case .array = $0 { false } else if case .object = $0 { false } else { true } }
        default:
            return true
        }
    }

    /// The value as a query string can carry it: empty arrays and dictionaries carry nothing. (`.none`, not
    /// `nil`: JSONValue is ExpressibleByNilLiteral, so `c ? nil : value` would be `.null`.)
    static func pruned(_ value: JSONValue) -> JSONValue? {
        switch value {
        case .object(let entries):
            let kept = entries.compactMap { key, value in pruned(value).map { (key, $0) } }
            return kept.isEmpty ? .none : .object(kept)
        case .array(let elements):
            return elements.isEmpty ? .none : value
        default:
            return value
        }
    }
}

/// A tree read back from decoded `(key, value)` pairs: `a[b][]=x` puts `x` in the list `b` of the table `a`.
indirect enum RebuiltValue: CustomStringConvertible {
    case leaf(String?)
    case list([String?])
    /// `lastKey` is the key inserted last, to check that keys arrive sorted and each name's pairs together.
    case table([String: RebuiltValue], lastKey: String?)

    mutating func insert(_ pair: (key: String, value: String?), context: String) throws(InvariantViolation) {
        let path = try Self.path(of: pair.key, context: context)
        try insert(path[...], pair.value, context: context)
    }

    /// `a[b][]` is `["a", "b", ""]`; the empty last segment is the array marker. Read by Unicode scalar: a
    /// name starting with a combining mark would join `[` into one `Character`.
    private static func path(of key: String, context: String) throws(InvariantViolation) -> [String] {
        let scalars = key.unicodeScalars
        guard let open = scalars.firstIndex(of: "[") else { return [key] }
        var segments = [String(scalars[..<open])]
        var rest = scalars[open...]
        while !rest.isEmpty {
            guard rest.first == "[", let close = rest.firstIndex(of: "]") else {
                throw InvariantViolation("\(context): the key \(excerpt(key)) is not name[a][b]…")
            }
            segments.append(String(rest[rest.index(after: rest.startIndex)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return segments
    }

    private mutating func insert(_ path: ArraySlice<String>, _ value: String?, context: String) throws(InvariantViolation) {
        guard case .table(var entries, let lastKey) = self, let name = path.first else {
            throw InvariantViolation("\(context): a value and a nested value under the same key")
        }
        if let lastKey, name != lastKey {
            try require(
                lastKey.utf16.lexicographicallyPrecedes(name.utf16) && entries[name] == nil,
                "\(context): key \(excerpt(name)) after \(excerpt(lastKey)): keys are not sorted, or one key's pairs are apart")
        }
        let rest = path.dropFirst()
        switch (rest.first, entries[name]) {
        case (nil, nil):
            entries[name] = .leaf(value)
        case ("", nil) where rest.count == 1:
            entries[name] = .list([value])
        case ("", .list(let elements)?) where rest.count == 1:
            entries[name] = .list(elements + [value])
        case (_?, nil):
            var child = RebuiltValue.table([:], lastKey: nil)
            try child.insert(rest, value, context: context)
            entries[name] = child
        case (_?, .table?):
            try entries[name]!.insert(rest, value, context: context)
        default:
            throw InvariantViolation("\(context): the key \(excerpt(name)) holds two kinds of value")
        }
        self = .table(entries, lastKey: name)
    }

    /// Whether this tree carries `value` as AFNetworking writes scalars: `null` a bare key, booleans `1` and
    /// `0`, integers in decimal, doubles with 16 significant digits.
    func matches(_ value: JSONValue?) -> Bool {
        switch (self, value) {
        case (.table(let entries, _), .object(let expected)?):
            return entries.count == expected.count && expected.allSatisfy { entries[$0.0]?.matches($0.1) ?? false }
        case (.table(let entries, _), nil):
            return entries.isEmpty
        case (.list(let elements), .array(let expected)?):
            return elements.count == expected.count && zip(elements, expected).allSatisfy { Self.text($0, carries: $1) }
        case (.leaf(let text), let scalar?):
            return Self.text(text, carries: scalar)
        default:
            return false
        }
    }

    private static func text(_ text: String?, carries value: JSONValue) -> Bool {
        switch value {
        case .null: return text == nil
        case .bool(let flag): return text == (flag ? "1" : "0")
        case .int(let number): return text.flatMap { Int($0) } == number
        case .string(let string): return text == string
        case .double(let number):
            guard let text else { return false }
            if number.isNaN { return text == "nan" || text == "-nan" }
            guard let read = Double(text) else { return false }
            // 16 digits round the largest doubles (±1.7976931348623157e308) up past the largest, to ±inf.
            if read.isInfinite, number.isFinite { return read.sign == number.sign && abs(number) >= 1.797693134862315e308 }
            return read == number || abs(read - number) <= abs(number).ulp * 16
        case .array, .object: return false
        }
    }

    var description: String {
        switch self {
        case .leaf(let text): return String(describing: text)
        case .list(let elements): return String(describing: elements)
        case .table(let entries, _): return "[" + entries.map { "\($0.key): \($0.value)" }.sorted().joined(separator: ", ") + "]"
        }
    }
}
