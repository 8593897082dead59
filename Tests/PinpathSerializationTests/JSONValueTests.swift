import FoundationEssentials
import PinpathSupport
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

/// The one JSON value of parameters, responses and events: objects keep their order when written, and compare
/// and hash as JSON reads them.
@Suite("JSON values")
struct JSONValueTests {
    @Test("Objects are equal, and hash alike, whatever the order of their members")
    func orderFreeEquality() {
        let written: JSONValue = ["a": 1, "b": ["c": nil, "d": [1.5, "x"]]]
        let reordered: JSONValue = ["b": ["d": [1.5, "x"], "c": nil], "a": 1]
        #expect(written == reordered)
        #expect(written.hashValue == reordered.hashValue)
        #expect(Set([written, reordered]).count == 1)
        #expect(written.encoded() != reordered.encoded())
        #expect(written != ["a": 1, "b": ["c": nil, "d": [1.5, "y"]]])
        #expect(JSONValue.int(1) != .double(1))
        #expect(JSONValue.array([1, 2]) != [2, 1])
    }

    @Test("An object literal keeps the order written; a repeated key keeps its last value, at its first place")
    func literalOrder() {
        #expect(JSONValue(dictionaryLiteral: ("b", 1), ("a", 2), ("b", 3)).encoded() == #"{"b":3,"a":2}"#)
        #expect(JSONValue(dictionaryLiteral: ("b", 1), ("a", 2), ("b", 3))["b"] == 3)
        #expect(JSONValue.object([("a", 1), ("a", 2)]) == ["a": 2])
    }

    @Test("A Swift dictionary becomes an object with its keys in UTF-16 order, as Foundation's compare: sorts")
    func dictionaryOrder() {
        let value = JSONValue.object(["～": 1, "😀": 2, "b": 3, "a": 4])
        #expect(value.encoded() == #"{"a":4,"b":3,"😀":2,"～":1}"#)
    }

    @Test("Members are read by key; anything but an object has none")
    func members() {
        let value: JSONValue = ["a": ["b": true]]
        #expect(value["a"]?["b"] == true)
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([1])["a"] == nil)
    }

    @Test("The parser keeps the text's order; a repeated key keeps its last value")
    func parsedOrder() throws {
        let value = try JSONParser.parse(Array(#"{"z":1,"a":{"y":2,"b":3},"z":4}"#.utf8))
        #expect(value.encoded() == #"{"z":4,"a":{"y":2,"b":3}}"#)
    }

    @Test("Encodable writes objects through keyed containers: JSONEncoder's formatting applies")
    func encoderFormatting() throws {
        let value: JSONValue = ["b": [1, 2.5, nil], "a": "x/y"]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == #"{"a":"x/y","b":[1,2.5,null]}"#)
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self).contains("\n  \"a\" : "))
    }

    @Test("NaN and the infinities do not encode, as with JSONEncoder; the event encoding writes null")
    func nonFinite() {
        for number in [Double.nan, .infinity, -.infinity] {
            #expect {
                try JSONEncoder().encode(JSONValue.array([.double(number)]))
            } throws: { error in
                if case EncodingError.invalidValue = error { true } else { false }
            }
            #expect(JSONValue.array([.double(number)]).encoded() == "[null]")
        }
    }

    @Test("Decodable reads any JSON value; whole numbers are integers")
    func decoding() throws {
        let text = #"{"i":3,"d":2.5,"s":"x","b":false,"n":null,"a":[1,{"k":[]}]}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(value == ["i": 3, "d": 2.5, "s": "x", "b": false, "n": nil, "a": [1, ["k": []]]])
        #expect(value == (try JSONParser.parse(Array(text.utf8))))
    }

    @Test(
        "A string is written as it is unless a character in it needs an escape",
        arguments: [
            ("plain", #""plain""#), ("", #""""#), ("dots… → é", #""dots… → é""#),
            ("a\u{2028}b\u{2029}", #""a\u2028b\u2029""#), ("tab\tquote\"back\\", #""tab\tquote\"back\\""#),
            ("bell\u{7}", #""bell\u0007""#),
        ])
    func stringEscapes(text: String, expected: String) {
        #expect(JSONValue.string(text).encoded() == expected)
    }
}
