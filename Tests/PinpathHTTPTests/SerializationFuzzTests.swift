import PinpathFuzzing
import Testing

/// The fuzz checks of the query-string serializer and the JSON parser (Tests/PinpathFuzzing), in bounded
/// form: the committed corpus and regressions, then seeded mutations (replay one with PINPATH_FUZZ_SEED).
@Suite("Fuzz inputs: query strings and JSON")
struct SerializationFuzzTests {
    @Test("Committed inputs keep their promises", arguments: [FuzzTarget.queryString, .json])
    func corpus(_ target: FuzzTarget) throws {
        let failures = try PropertyRun.corpusFailures(target)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    @Test("Seeded mutations keep their promises", arguments: [FuzzTarget.queryString, .json])
    func mutations(_ target: FuzzTarget) throws {
        let failures = try PropertyRun.mutationFailures(target, count: 5000)
        #expect(failures.isEmpty, "\(failures.prefix(5).joined(separator: "\n"))")
    }
}
