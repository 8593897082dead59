import PinpathFuzzing
import Testing

/// The fuzz checks of pin strings, host patterns and PEM/DER loading (Tests/PinpathFuzzing), in bounded
/// form: the committed corpus and regressions, then seeded mutations (replay one with PINPATH_FUZZ_SEED).
@Suite("Fuzz inputs: pins and certificates")
struct SecurityFuzzTests {
    @Test("Committed inputs keep their promises", arguments: [FuzzTarget.pins, .certificates])
    func corpus(_ target: FuzzTarget) throws {
        let failures = try PropertyRun.corpusFailures(target)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    @Test("Seeded mutations keep their promises", arguments: [FuzzTarget.pins, .certificates])
    func mutations(_ target: FuzzTarget) throws {
        let failures = try PropertyRun.mutationFailures(target, count: 5000)
        #expect(failures.isEmpty, "\(failures.prefix(5).joined(separator: "\n"))")
    }
}
