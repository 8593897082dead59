/// Request parameters: names and JSON-like values, as AFNetworking's `parameters` dictionaries.
public typealias Parameters = [String: ParameterValue]

/// A JSON-like value: what request parameters hold and what a JSON response decodes into.
///
/// Integers and floating-point numbers are kept apart so that `1` is sent as `1`, not `1.0`.
public enum ParameterValue: Sendable, Hashable {
    /// JSON `null`; in a query string, the bare key.
    case null
    /// `true` or `false`; in a query string `1` or `0`, as AFNetworking writes an `NSNumber` boolean.
    case bool(Bool)
    /// An integer.
    case int(Int)
    /// A floating-point number. NaN and the infinities cannot be sent as JSON (``HTTPError/Code/invalidBody``).
    case double(Double)
    /// A string.
    case string(String)
    /// An array; in a query string, `key[]=value` for each element.
    case array([ParameterValue])
    /// A dictionary; in a query string, `key[name]=value` for each entry.
    case dictionary([String: ParameterValue])
}

extension ParameterValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
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
    public init(arrayLiteral elements: ParameterValue...) { self = .array(elements) }
    /// A dictionary literal; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, ParameterValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension ParameterValue: Codable {
    /// Decodes any JSON value (or YAML scalar, sequence or mapping); whole numbers become ``int(_:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([ParameterValue].self) {
            self = .array(value)
        } else {
            self = .dictionary(try container.decode([String: ParameterValue].self))
        }
    }

    /// Encodes the value as the JSON it stands for.
    /// - Throws: `EncodingError.invalidValue` for NaN and the infinities (`JSONEncoder`'s default).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .dictionary(let value): try container.encode(value)
        }
    }
}

extension ParameterValue {
    /// The value with every dictionary entry whose value is `null` removed, at every depth, as
    /// AFNetworking's `removesKeysWithNullValues`: `null` elements of arrays stay (they have no key).
    public func removingKeysWithNullValues() -> ParameterValue {
        switch self {
        case .array(let elements):
            return .array(elements.map { $0.removingKeysWithNullValues() })
        case .dictionary(let entries):
            return .dictionary(entries.filter { $0.value != .null }.mapValues { $0.removingKeysWithNullValues() })
        default:
            return self
        }
    }
}
