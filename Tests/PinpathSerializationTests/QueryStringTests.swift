import FoundationEssentials
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

@Suite("Query strings (AFQueryStringFromParameters)")
struct QueryStringTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var parameters: Parameters
        var expected: String
        var testDescription: String { name }
    }

    static let emoji = "👴🏿👷🏻👮🏽"
    static let emojiEscaped = "%F0%9F%91%B4%F0%9F%8F%BF%F0%9F%91%B7%F0%9F%8F%BB%F0%9F%91%AE%F0%9F%8F%BD"

    /// The vectors of AFNetworking's own tests (FIELD-NOTES §5), then nesting, arrays, null and numbers.
    static let vectors: [Vector] = [
        Vector(
            name: "AFNetworking: reserved characters, / and ? kept", parameters: ["key": " :#[]@!$&'()*+,;=/?"],
            expected: "key=%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?"),
        Vector(
            name: "AFNetworking: percent-escaping string", parameters: ["key": ":#[]@!$&'()*+,;=?/"],
            expected: "key=%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D?/"),
        Vector(
            name: "AFNetworking: escapes are escaped again", parameters: ["key": "%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F"],
            expected: "key=%2520%2521%2522%2523%2524%2525%2526%2527%2528%2529%252A%252B%252C%252F"),
        Vector(
            name: "AFNetworking: sorted keys, & in a value", parameters: ["key1": "value&", "key": "value"],
            expected: "key=value&key1=value%26"),
        Vector(
            name: "AFNetworking #3028: emoji past the 50-unit batch",
            parameters: ["test": .string("!" + String(repeating: emoji, count: 5))],
            expected: "test=%21" + String(repeating: emojiEscaped, count: 5)),
        Vector(name: "unreserved characters pass", parameters: ["a-b.c_d~e": "AZaz09-._~"], expected: "a-b.c_d~e=AZaz09-._~"),
        Vector(name: "nested dictionary", parameters: ["a": ["b": "c"]], expected: "a%5Bb%5D=c"),
        Vector(name: "array", parameters: ["a": ["x", "y"]], expected: "a%5B%5D=x&a%5B%5D=y"),
        Vector(
            name: "nested keys sorted at every level", parameters: ["z": 1, "a": ["y": 2, "b": ["d": 3, "c": 4]]],
            expected: "a%5Bb%5D%5Bc%5D=4&a%5Bb%5D%5Bd%5D=3&a%5By%5D=2&z=1"),
        Vector(name: "array of dictionaries", parameters: ["a": [["b": 1], ["b": 2]]], expected: "a%5B%5D%5Bb%5D=1&a%5B%5D%5Bb%5D=2"),
        Vector(name: "array keeps its order", parameters: ["a": ["y", "x", "z"]], expected: "a%5B%5D=y&a%5B%5D=x&a%5B%5D=z"),
        Vector(name: "null gives the bare key", parameters: ["a": nil, "b": "1"], expected: "a&b=1"),
        Vector(name: "null in an array", parameters: ["a": [nil]], expected: "a%5B%5D"),
        Vector(name: "empty containers give nothing", parameters: ["a": [], "b": [:], "c": "1"], expected: "c=1"),
        Vector(name: "no parameters", parameters: [:], expected: ""),
        Vector(name: "empty string value", parameters: ["a": ""], expected: "a="),
        Vector(name: "booleans as NSNumber writes them", parameters: ["t": true, "f": false], expected: "f=0&t=1"),
        Vector(
            name: "numbers as NSNumber writes them", parameters: ["i": -42, "d": 1.5, "w": 2.0, "s": 0.1, "l": 1e20],
            expected: "d=1.5&i=-42&l=1e%2B20&s=0.1&w=2"),
        Vector(
            name: "keys sort by UTF-16 unit, as compare:", parameters: ["～": 1, "😀": 2, "b": 3, "B": 4],
            expected: "B=4&b=3&%F0%9F%98%80=2&%EF%BD%9E=1"),
        Vector(name: "space, plus and non-ASCII", parameters: ["q": "a b+c é"], expected: "q=a%20b%2Bc%20%C3%A9"),
    ]

    @Test("Encodes as AFNetworking", arguments: vectors)
    func encodes(_ vector: Vector) {
        #expect(QueryString.encode(vector.parameters) == vector.expected)
    }

    @Test(
        "Flattened pairs for multipart fields keep query order and nulls",
        arguments: [
            (["b": ["x": 1], "a": nil] as Parameters, ["a", "b[x]"], [nil, "1"] as [String?])
        ])
    func pairs(parameters: Parameters, keys: [String], values: [String?]) {
        let pairs = QueryString.pairs(parameters)
        #expect(pairs.map(\.key) == keys)
        #expect(pairs.map(\.value) == values)
    }
}
