import PinpathSupport

/// A strict RFC 8259 parser into `JSONValue` that says where the text went wrong.
///
/// `--json-body` must be refused where a strict server would refuse it, and invalid JSON, sent or received,
/// must be reported with its line and column. FoundationEssentials' `JSONDecoder` (the only JSON reader this
/// module imports) is lenient: it accepts a trailing comma (`[1,]`, `{"a":1,}`), a UTF-8 byte-order mark
/// and UTF-16 text; and on Swift 6.3 for Linux its error for malformed text says only "The given data was
/// not valid JSON.", with no underlying error. Foundation's `JSONSerialization` places the error (a
/// character offset, "around character 12") but is as lenient, and would bring all of Foundation in.
/// `package` (with ``parse(_:)`` and ``SyntaxError``) for the fuzz entry points in Tests/PinpathFuzzing.
package struct JSONParser {
    /// Why and where the text is not JSON. Lines and columns count from 1; columns count bytes.
    package struct SyntaxError: Error, CustomStringConvertible {
        package var reason: String
        package var line: Int
        package var column: Int
        package var description: String { "\(reason) at line \(line), column \(column)" }
    }

    /// Deeper nesting is refused rather than risking the stack (a recursive parser, hostile input).
    static let maximumDepth = 512

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    /// Parses one JSON value, with optional whitespace around it and nothing else.
    package static func parse(_ bytes: [UInt8]) throws(SyntaxError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func parseValue() throws(SyntaxError) -> JSONValue {
        guard let byte = current else { throw error("unexpected end of text, expected a value") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected \(describe(byte)), expected a value")
        }
    }

    /// Members in the text's order; a repeated key keeps its last value, as most JSON readers do.
    private mutating func parseObject() throws(SyntaxError) -> JSONValue {
        var members: [(String, JSONValue)] = []
        try parseContainer(closing: "}") { (parser) throws(SyntaxError) in
            guard parser.current == UInt8(ascii: "\"") else {
                throw parser.error("expected a string key, found \(parser.describe(parser.current))")
            }
            let key = try parser.parseString()
            parser.skipWhitespace()
            try parser.expect(":")
            parser.skipWhitespace()
            members.append((key, try parser.parseValue()))
        }
        return .object(uniquingKeys: members)
    }

    private mutating func parseArray() throws(SyntaxError) -> JSONValue {
        var elements: [JSONValue] = []
        try parseContainer(closing: "]") { (parser) throws(SyntaxError) in elements.append(try parser.parseValue()) }
        return .array(elements)
    }

    /// Reads `[`/`{`, elements separated by commas (none after the last), and `closing`.
    private mutating func parseContainer(
        closing: Unicode.Scalar, _ parseElement: (inout JSONParser) throws(SyntaxError) -> Void
    ) throws(SyntaxError) {
        guard depth < Self.maximumDepth else { throw error("nested deeper than \(Self.maximumDepth) levels") }
        depth += 1
        index += 1
        skipWhitespace()
        if current != UInt8(ascii: closing) {
            while true {
                try parseElement(&self)
                skipWhitespace()
                if current == UInt8(ascii: closing) { break }
                try expect(",", orClosing: closing)
                skipWhitespace()
            }
        }
        index += 1
        depth -= 1
    }

    private mutating func parseString() throws(SyntaxError) -> String {
        let start = index
        index += 1
        var utf8: [UInt8] = []
        while true {
            guard let byte = current else { throw error("unterminated string", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: utf8, as: UTF8.self) else { throw error("string is not valid UTF-8", at: start) }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                try parseEscape(into: &utf8)
            case 0..<0x20:
                throw error("control character \(describe(byte)) in a string (escape it)")
            default:
                utf8.append(byte)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into utf8: inout [UInt8]) throws(SyntaxError) {
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
            UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
        ]
        guard let byte = current else { throw error("unterminated escape") }
        if let replacement = simple[byte] {
            utf8.append(replacement)
            index += 1
            return
        }
        guard byte == UInt8(ascii: "u") else { throw error("invalid escape \\\(describe(byte))") }
        let escapeStart = index - 1
        var scalar = try parseHex4()
        if (0xD800..<0xDC00).contains(scalar) {
            // A high surrogate must be followed by an escaped low one; together they are one scalar.
            guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate escape", at: escapeStart)
            }
            index += 1
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate escape", at: escapeStart) }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00..<0xE000).contains(scalar) {
            throw error("unpaired surrogate escape", at: escapeStart)
        }
        // Surrogates were handled above, so the value is a scalar.
        UTF8.encode(Unicode.Scalar(scalar)!) { utf8.append($0) }
    }

    /// Reads `uXXXX` with the index on the `u`.
    private mutating func parseHex4() throws(SyntaxError) -> UInt32 {
        index += 1
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = hexValue(byte) else { throw error("\\u needs four hexadecimal digits") }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    private mutating func parseNumber() throws(SyntaxError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
            if let next = current, isDigit(next) { throw error("leading zero in a number", at: start) }
        } else {
            try digits(after: "-")
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try digits(after: ".")
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            try digits(after: "an exponent")
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int(text) { return .int(value) }
        // Integers beyond Int's range become doubles, as JSONSerialization does; beyond Double's, an error.
        guard let value = Double(text), value.isFinite else { throw error("number \(text) is out of range", at: start) }
        return .double(value)
    }

    private mutating func digits(after what: String) throws(SyntaxError) {
        guard let first = current, isDigit(first) else { throw error("expected a digit after \(what)") }
        while let byte = current, isDigit(byte) { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private mutating func expectWord(_ word: String) throws(SyntaxError) {
        let start = index
        for expected in word.utf8 {
            guard current == expected else { throw error("invalid literal, expected \(word)", at: start) }
            index += 1
        }
    }

    private mutating func expect(_ character: Unicode.Scalar, orClosing closing: Unicode.Scalar? = nil) throws(SyntaxError) {
        guard current == UInt8(ascii: character) else {
            let wanted = closing.map { "\"\(character)\" or \"\($0)\"" } ?? "\"\(character)\""
            throw error("expected \(wanted), found \(describe(current))")
        }
        index += 1
    }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "the end of the text" }
        if (0x21..<0x7F).contains(byte) { return "\"\(Character(Unicode.Scalar(byte)))\"" }
        return "byte 0x\(String(byte, radix: 16, uppercase: true))"
    }

    private func error(_ reason: String, at position: Int? = nil) -> SyntaxError {
        let offset = min(position ?? index, bytes.count)
        let lineStart = bytes[..<offset].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
        let line = bytes[..<offset].count { $0 == 0x0A } + 1
        return SyntaxError(reason: reason, line: line, column: offset - lineStart + 1)
    }
}
