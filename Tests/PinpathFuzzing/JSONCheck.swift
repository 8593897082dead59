import FoundationEssentials
import PinpathHTTP
import PinpathSerialization
import PinpathSupport

/// The strict JSON parser (``JSONParser``) that reads server responses and `--json-body`, on the fuzz bytes.
///
/// Promises checked: a refusal points inside the text (line from 1, column from 1 within that line, both
/// counted as the parser documents: lines by `\n`, columns in bytes); an accepted value survives
/// `JSONEncoder` and a second parse unchanged (numbers compared by value).
enum JSONCheck {
    static func check(_ bytes: [UInt8]) throws(InvariantViolation) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
            try require(
                error.line >= 1 && error.line <= lines.count && error.column >= 1 && error.column <= lines[error.line - 1].count + 1,
                "\(error) is outside the \(bytes.count) bytes of \(excerpt(String(decoding: bytes, as: UTF8.self)))")
            return
        }
        let encoded: Data
        do {
            encoded = try JSONEncoder().encode(value)
        } catch {
            throw InvariantViolation("the parsed value \(excerpt("\(value)")) does not encode: \(error)")
        }
        do {
            let again = try JSONParser.parse(Array(encoded))
            try require(
                sameJSON(value, again),
                "\(excerpt("\(value)")) reads back from \(excerpt(String(decoding: encoded, as: UTF8.self))) as \(excerpt("\(again)"))")
        } catch let violation as InvariantViolation {
            throw violation
        } catch {
            throw InvariantViolation("JSONEncoder's \(excerpt(String(decoding: encoded, as: UTF8.self))) does not parse: \(error)")
        }
    }

    /// Equal as JSON: `1` and `1.0` are the same number (JSONEncoder writes a whole double without `.0`).
    static func sameJSON(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.double(let x), .double(let y)): return x == y
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(sameJSON)
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in b[key].map { sameJSON(value, $0) } ?? false }
        default: return a == b
        }
    }
}
