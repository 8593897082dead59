import PinpathFuzzing
import Testing

/// The fuzz checks of pin strings, host patterns and PEM/DER loading (Tests/PinpathFuzzing), in bounded
/// form: the committed corpus and regressions, then seeded mutations (replay one with PINPATH_FUZZ_SEED).
@Suite("Fuzz inputs: pins and certificates")
struct SecurityFuzzTests {
    @Test("Committed inputs and seeded mutations keep their promises", arguments: [FuzzTarget.pins, .certificates])
    func fuzzInputs(_ target: FuzzTarget) throws {
        let failures = try PropertyRun.failures(target, mutations: target == .pins ? 5000 : 2000)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
