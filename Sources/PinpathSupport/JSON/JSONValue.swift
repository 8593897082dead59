/// A JSON value whose objects keep their keys in the order written, so event lines read naturally
/// (`schema`, `time`, `seq`, `event` first). Encoding is hand-written: it is on the event hot path and
/// Foundation's encoder neither keeps key order nor avoids allocations.
///
/// Equality and hashing are JSON's: two objects with the same members are equal whatever their order, and an
/// object's repeated key counts with its last value, as a JSON reader takes it. Integers and floating-point
/// numbers are kept apart, so that `1` is written `1` and not `1.0`. This is also what request parameters hold
/// and what a JSON response decodes into (PinpathHTTP).
public enum JSONValue: Sendable, Hashable, ExpressibleByNilLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// JSON `null`; in a query string, the bare key.
    case null
    /// `true` or `false`; in a query string `1` or `0`, as AFNetworking writes an `NSNumber` boolean.
    case bool(Bool)
    /// An integer.
    case int(Int)
    /// A floating-point number. NaN and the infinities are written `null` by ``encode(into:)``, and refused by
    /// `Encodable` (`EncodingError.invalidValue`, as `JSONEncoder` refuses them).
    case double(Double)
    /// A string.
    case string(String)
    /// An array; in a query string, `key[]=value` for each element.
    case array([JSONValue])
    /// An object, its members in the order they are written; in a query string, `key[name]=value` for each.
    case object([(String, JSONValue)])

    /// `nil` is ``null``.
    public init(nilLiteral: ()) { self = .null }
    /// A boolean literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A floating-point literal.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object literal, in the order written; a repeated key keeps its last value (at its first place).
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(uniquingKeys: elements) }

    /// `.string(value)`, or `.null` for `nil`.
    public static func string(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }

    /// An object of the dictionary's members, keys sorted by UTF-16 code unit (Foundation's `compare:`), so
    /// that the same dictionary is always written the same way.
    public static func object(_ dictionary: [String: JSONValue]) -> JSONValue {
        .object(dictionary.sorted { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) }.map { ($0.key, $0.value) })
    }

    /// An object of `members` in their order, a repeated key keeping its last value at the place of its first.
    /// `package` for PinpathHTTP's JSON parser, which reads objects this way.
    package static func object(uniquingKeys members: [(String, JSONValue)]) -> JSONValue {
        var places: [String: Int] = [:]
        places.reserveCapacity(members.count)
        var unique: [(String, JSONValue)] = []
        unique.reserveCapacity(members.count)
        for (key, value) in members {
            if let place = places[key] {
                unique[place].1 = value
            } else {
                places[key] = unique.count
                unique.append((key, value))
            }
        }
        return .object(unique)
    }

    /// The value of an object's member `key` (the last, if the key is repeated); `nil` for a missing key or a
    /// value that is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.0 == key }?.1
    }

    /// The value with every object member whose value is `null` removed, at every depth, as AFNetworking's
    /// `removesKeysWithNullValues`: `null` elements of arrays stay (they have no key).
    public func removingKeysWithNullValues() -> JSONValue {
        switch self {
        case .array(let elements):
            return .array(elements.map { $0.removingKeysWithNullValues() })
        case .object(let members):
            return .object(members.filter { $0.1 != .null }.map { ($0.0, $0.1.removingKeysWithNullValues()) })
        default:
            return self
        }
    }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let left), .bool(let right)): return left == right
        case (.int(let left), .int(let right)): return left == right
        case (.double(let left), .double(let right)): return left == right
        case (.string(let left), .string(let right)): return left == right
        case (.array(let left), .array(let right)): return left == right
        case (.object(let left), .object(let right)):
            // Members in the same order are the common case; any other order compares as JSON reads it.
            if left.count == right.count, zip(left, right).allSatisfy({ $0.0 == $1.0 && $0.1 == $1.1 }) { return true }
            return Self.membersByKey(left) == Self.membersByKey(right)
        default: return false
        }
    }

    /// Hashes the payload only: values of different kinds are never equal, so they need not hash apart.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: break
        case .bool(let value): hasher.combine(value)
        case .int(let value): hasher.combine(value)
        case .double(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        // A dictionary's hash does not depend on its order, as equality does not.
        case .object(let members): hasher.combine(Self.membersByKey(members))
        }
    }

    /// The members as a JSON reader takes them: a repeated key has its last value.
    private static func membersByKey(_ members: [(String, JSONValue)]) -> [String: JSONValue] {
        Dictionary(members, uniquingKeysWith: { _, last in last })
    }

    /// The compact encoding, one line, no trailing newline.
    public func encoded() -> String {
        var output = ""
        encode(into: &output)
        return output
    }

    /// Appends the compact encoding to `output`; NaN and the infinities are written `null`.
    public func encode(into output: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        encode(into: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the compact encoding's UTF-8 bytes to `output`; NaN and the infinities are written `null`.
    /// Event lines are built this way: appending to a byte array costs a fraction of appending to a `String`.
    public func encode(into output: inout [UInt8]) {
        switch self {
        case .null: Self.append("null", to: &output)
        case .bool(let value): Self.append(value ? "true" : "false", to: &output)
        case .int(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value): output.append(contentsOf: (value.isFinite ? String(value) : "null").utf8)
        case .string(let value): Self.encode(string: value, into: &output)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                value.encode(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.encode(string: key, into: &output)
                output.append(UInt8(ascii: ":"))
                value.encode(into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Appends a literal's bytes as one copy (a `String`'s UTF-8 view would go through the generic path).
    private static func append(_ literal: StaticString, to output: inout [UInt8]) {
        output.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    private static func encode(string: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most strings need no escape: copied whole, they cost a memcpy instead of an append per byte.
        // 0xE2 leads U+2028 and U+2029, escaped below.
        func isPlain(_ byte: UInt8) -> Bool {
            byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != 0xE2
        }
        let utf8 = string.utf8
        // From the contiguous bytes when the string has them: appending a buffer is a memcpy, appending the
        // UTF-8 view goes through the generic sequence path.
        var copied = utf8.withContiguousStorageIfAvailable { bytes in
            guard bytes.allSatisfy(isPlain) else { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if copied == nil, utf8.allSatisfy(isPlain) {
            output.append(contentsOf: utf8)
            copied = true
        }
        if copied == true {
            output.append(UInt8(ascii: "\""))
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output.append(contentsOf: #"\""#.utf8)
            case "\\": output.append(contentsOf: #"\\"#.utf8)
            case "\n": output.append(contentsOf: #"\n"#.utf8)
            case "\r": output.append(contentsOf: #"\r"#.utf8)
            case "\t": output.append(contentsOf: #"\t"#.utf8)
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                output.append(contentsOf: #"\u"#.utf8)
                output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: 4 - hex.count))
                output.append(contentsOf: hex.utf8)
            default: output.append(contentsOf: scalar.utf8)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
