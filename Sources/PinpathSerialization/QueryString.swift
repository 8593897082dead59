import Glibc
import PinpathSupport

/// AFNetworking's query strings (`AFQueryStringFromParameters`), byte for byte: used in URLs for GET, HEAD
/// and DELETE and as the `application/x-www-form-urlencoded` body otherwise.
///
/// Keys are sorted at every level; a nested object gives `a[b]=c`, an array `a[]=x&a[]=y`, `null` the
/// bare key; an empty array or object gives nothing. Keys and values are escaped by ``escape(_:)``.
public enum QueryString {
    /// The query string for `parameters`, without a leading `?`; empty for no parameters.
    public static func encode(_ parameters: Parameters) -> String {
        pairs(key: nil, value: .object(parameters)).map { pair in
            pair.value.map { "\(escape(pair.key))=\(escape($0))" } ?? escape(pair.key)
        }.joined(separator: "&")
    }

    /// The flattened `(key, value)` pairs of `parameters` in query-string order, unescaped: `("a[b]", "c")`,
    /// with `nil` for a `null` value. Multipart forms use these as their text fields, as AFNetworking does.
    /// `package` for the fuzz entry points (Tests/PinpathFuzzing), which decode the query string back to these.
    package static func pairs(_ parameters: Parameters) -> [(key: String, value: String?)] {
        pairs(key: nil, value: .object(parameters))
    }

    /// Percent-escapes everything but ASCII letters, digits and `-._~/?` (`AFPercentEscapedStringFromString`:
    /// RFC 3986 §3.4 lets a query keep `/` and `?`; every other delimiter is escaped so that it cannot end a
    /// key or a value). Works on the UTF-8 bytes of the whole string.
    ///
    /// AFNetworking escapes in batches of 50 UTF-16 units widened to whole grapheme clusters only to work
    /// around an `NSString` bug (AFNetworking PR #3028); escaping byte by byte has no batches, so no UTF-8
    /// sequence or grapheme cluster can be split.
    public static func escape(_ string: String) -> String {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(string.utf8.count)
        for byte in string.utf8 {
            if isUnreserved(byte) {
                escaped.append(byte)
            } else {
                escaped += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        byte.isASCIIAlphanumeric || "-._~/?".utf8.contains(byte)
    }

    /// `AFQueryStringPairsFromKeyAndValue`.
    private static func pairs(key: String?, value: JSONValue) -> [(key: String, value: String?)] {
        switch value {
        case .object(let members):
            // As a dictionary, as AFNetworking's are: a repeated name has its last value.
            let entries = Dictionary(members, uniquingKeysWith: { _, last in last })
            return entries.keys.sorted(by: precedesInFoundationOrder).flatMap { name in
                pairs(key: key.map { "\($0)[\(name)]" } ?? name, value: entries[name]!)
            }
        case .array(let elements):
            return elements.flatMap { pairs(key: "\(key ?? "")[]", value: $0) }
        default:
            return [(key ?? "", scalarDescription(value))]
        }
    }

    /// AFNetworking sorts keys with `compare:`, which orders by UTF-16 code unit; Swift's `<` orders by
    /// Unicode scalar, which differs for characters above U+FFFF (`😀` sorts before `～` in UTF-16).
    private static func precedesInFoundationOrder(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf16.lexicographicallyPrecedes(rhs.utf16)
    }

    /// The `description` AFNetworking takes of a value: `NSNumber` writes booleans as `1` and `0` and doubles
    /// with `%0.16g` (so `1.0` is `1` and `0.1` is `0.1`).
    private static func scalarDescription(_ value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .bool(let value): return value ? "1" : "0"
        case .int(let value): return String(value)
        case .double(let value): return formatted(value)
        case .string(let value): return value
        case .array, .object: preconditionFailure("containers are flattened by pairs(key:value:)")
        }
    }

    private static func formatted(_ value: Double) -> String {
        var buffer = [CChar](repeating: 0, count: 32)
        // %0.16g never needs more than 24 bytes ("-1.234567890123456e-308").
        _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%0.16g", $0) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
