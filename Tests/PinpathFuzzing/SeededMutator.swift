/// Deterministic, libFuzzer-style mutations of committed inputs, for the property tests that run in CI:
/// the same seed gives the same inputs, so a failure printed with its seed can be replayed.
public struct SeededMutator: Sendable {
    private var state: UInt64
    private let seeds: [[UInt8]]
    private let dictionary: [[UInt8]]
    /// Inputs grow no larger than this, as libFuzzer's `-max_len`.
    public let maximumLength: Int

    /// Mutates `corpus`'s inputs with its dictionary's tokens; `seed` fixes the sequence.
    public init(seed: UInt64, corpus: FuzzCorpus, maximumLength: Int = 4096) {
        state = seed
        seeds = corpus.inputs.map(\.bytes).isEmpty ? [[]] : corpus.inputs.map(\.bytes)
        dictionary = corpus.dictionary
        self.maximumLength = maximumLength
    }

    /// SplitMix64.
    private mutating func random() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(random() % UInt64(bound)) }

    /// The next input: a committed one with one to eight mutations stacked.
    public mutating func next() -> [UInt8] {
        var bytes = seeds[below(seeds.count)]
        for _ in 0...below(8) { mutate(&bytes) }
        return Array(bytes.prefix(maximumLength))
    }

    private mutating func mutate(_ bytes: inout [UInt8]) {
        let position = below(bytes.count + 1)
        switch below(dictionary.isEmpty ? 7 : 9) {
        case 0 where !bytes.isEmpty:  // flip a bit
            bytes[below(bytes.count)] ^= 1 << UInt8(below(8))
        case 1 where !bytes.isEmpty:  // any byte
            bytes[below(bytes.count)] = UInt8(truncatingIfNeeded: random())
        case 2:  // insert a few random bytes
            bytes.insert(contentsOf: (0...below(4)).map { _ in UInt8(truncatingIfNeeded: random()) }, at: position)
        case 3 where !bytes.isEmpty:  // delete a range
            bytes.removeSubrange(position..<min(bytes.count, position + 1 + below(16)))
        case 4 where !bytes.isEmpty:  // repeat a range (deep nesting, long runs)
            let start = below(bytes.count)
            let piece = bytes[start..<min(bytes.count, start + 1 + below(32))]
            bytes.insert(contentsOf: Array(repeating: Array(piece), count: 1 + below(16)).joined(), at: position)
        case 5:  // splice in part of another input
            let other = seeds[below(seeds.count)]
            let start = below(other.count)
            bytes.insert(contentsOf: other[start..<min(other.count, start + below(64))], at: position)
        case 6 where !bytes.isEmpty:  // truncate
            bytes.removeSubrange(position...)
        case 7, 8:  // a dictionary token
            bytes.insert(contentsOf: dictionary[below(dictionary.count)], at: position)
        default:
            bytes.insert(UInt8(truncatingIfNeeded: random()), at: position)
        }
    }
}
