import FoundationEssentials
import Glibc

/// The bounded form of fuzzing that the normal test suite runs: every committed input, then a number of
/// seeded mutations of them, each through ``FuzzTarget/check(_:)``.
public enum PropertyRun {
    /// `PINPATH_FUZZ_SEED` when set (to replay a printed failure, or to explore), otherwise a fixed seed so
    /// that CI runs the same inputs every time.
    public static var seed: UInt64 {
        getenv("PINPATH_FUZZ_SEED").flatMap { UInt64(String(cString: $0)) } ?? 20_261_123
    }

    /// The committed inputs, then `mutations` seeded mutations of them, that break a promise (at most
    /// `limit` of each, described as ``corpusFailures(_:)`` and ``mutationFailures(_:count:seed:)`` do).
    public static func failures(_ target: FuzzTarget, mutations: Int, limit: Int = 5) throws -> [String] {
        try Array(corpusFailures(target).prefix(limit)) + Array(mutationFailures(target, count: mutations).prefix(limit))
    }

    /// The committed inputs that break a promise, as `path: violation`.
    public static func corpusFailures(_ target: FuzzTarget) throws -> [String] {
        try FuzzCorpus(target).inputs.compactMap { input in
            do {
                try target.check(input.bytes)
                return nil
            } catch {
                return "\(input.path): \(error)"
            }
        }
    }

    /// `count` mutated inputs from `seed`; the failures name the seed, the input's number and its bytes in
    /// base64, so that one can be saved as a regression file.
    public static func mutationFailures(_ target: FuzzTarget, count: Int, seed: UInt64 = seed) throws -> [String] {
        print("\(target.rawValue): \(count) mutated inputs, PINPATH_FUZZ_SEED=\(seed)")
        var mutator = SeededMutator(seed: seed, corpus: try FuzzCorpus(target))
        var failures: [String] = []
        for number in 0..<count {
            let bytes = mutator.next()
            do {
                try target.check(bytes)
            } catch {
                failures.append("PINPATH_FUZZ_SEED=\(seed) input \(number) (base64 \(Data(bytes).base64EncodedString())): \(error)")
            }
        }
        return failures
    }
}
