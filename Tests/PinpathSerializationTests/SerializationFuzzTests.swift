import PinpathFuzzing
import Testing

@testable import PinpathHTTP
@testable import PinpathSerialization

/// The fuzz checks of the query-string serializer and the JSON parser (Tests/PinpathFuzzing), in bounded
/// form: the committed corpus and regressions, then seeded mutations (replay one with PINPATH_FUZZ_SEED).
@Suite("Fuzz inputs: query strings and JSON")
struct SerializationFuzzTests {
    @Test("Committed inputs and seeded mutations keep their promises", arguments: [FuzzTarget.queryString, .json])
    func fuzzInputs(_ target: FuzzTarget) throws {
        let failures = try PropertyRun.failures(target, mutations: 5000)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}

/// The JSON parser is recursive; its depth limit must hold on the smallest stack it runs on.
@Suite("JSON: nesting at the limit")
struct JSONNestingTests {
    @Test("512 levels parse, 513 are refused with a position, on a task of the cooperative pool")
    func deepestNesting() async throws {
        let limit = JSONParser.maximumDepth
        let deepest = Array(repeating: UInt8(ascii: "["), count: limit) + Array(repeating: UInt8(ascii: "]"), count: limit)
        let tooDeep = Array(repeating: UInt8(ascii: "["), count: limit + 1)
        let (parsed, refused) = await Task.detached {
            ((try? JSONParser.parse(deepest)) != nil, "\(Result { try JSONParser.parse(tooDeep) })")
        }.value
        #expect(parsed)
        #expect(refused.contains("nested deeper than 512 levels at line 1, column 513"), "\(refused)")
    }
}
