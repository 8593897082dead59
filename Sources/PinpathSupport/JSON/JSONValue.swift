/// A JSON value whose objects keep their keys in the order written, so event lines read naturally
/// (`schema`, `time`, `seq`, `event` first). Encoding is hand-written: it is on the event hot path and
/// Foundation's encoder neither keeps key order nor avoids allocations.
public enum JSONValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    /// `.string(value)`, or `.null` for `nil`.
    public static func string(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.encoded() == rhs.encoded() }

    /// The compact encoding, one line, no trailing newline.
    public func encoded() -> String {
        var output = ""
        output.reserveCapacity(256)
        encode(into: &output)
        return output
    }

    public func encode(into output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .int(let value): output += String(value)
        case .double(let value): output += value.isFinite ? String(value) : "null"
        case .string(let value): Self.encode(string: value, into: &output)
        case .array(let values):
            output += "["
            for (index, value) in values.enumerated() {
                if index > 0 { output += "," }
                value.encode(into: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { output += "," }
                Self.encode(string: key, into: &output)
                output += ":"
                value.encode(into: &output)
            }
            output += "}"
        }
    }

    private static func encode(string: String, into output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
