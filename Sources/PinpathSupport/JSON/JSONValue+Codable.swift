extension JSONValue: Codable {
    /// Decodes any JSON value (or YAML scalar, sequence or mapping); whole numbers become ``int(_:)``. An
    /// object's members come in the decoder's order (`JSONDecoder` does not keep the text's).
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
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            let object = try decoder.container(keyedBy: MemberKey.self)
            self = .object(try object.allKeys.map { key in (key.stringValue, try object.decode(JSONValue.self, forKey: key)) })
        }
    }

    /// Encodes the value as the JSON it stands for; an object's members through a keyed container in their
    /// order, so that the encoder's options (`JSONEncoder`'s `.sortedKeys`, `.prettyPrinted`) apply.
    /// - Throws: `EncodingError.invalidValue` for NaN and the infinities (`JSONEncoder`'s default).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for (key, value) in members { try container.encode(value, forKey: MemberKey(key)) }
        default:
            var container = encoder.singleValueContainer()
            switch self {
            case .null: try container.encodeNil()
            case .bool(let value): try container.encode(value)
            case .int(let value): try container.encode(value)
            case .double(let value): try container.encode(value)
            case .string(let value): try container.encode(value)
            case .array(let values): try container.encode(values)
            case .object: preconditionFailure("objects are encoded through a keyed container above")
            }
        }
    }

    /// An object member's name as a coding key: any string.
    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init(_ name: String) { stringValue = name }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
