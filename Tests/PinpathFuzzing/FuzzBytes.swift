/// Reads structured choices out of fuzz input bytes, front to back: libFuzzer's mutations of the bytes become
/// mutations of the structure (how many entries, which kind of value, which characters). Past the end every
/// read returns zero, so any input, even an empty one, describes a value.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// A number below `bound` (which must be positive).
    mutating func number(below bound: Int) -> Int { Int(byte()) % bound }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// Eight bytes, little-endian.
    mutating func word() -> UInt64 { (0..<8).reduce(0) { value, shift in value | UInt64(byte()) << (8 * UInt64(shift)) } }

    /// A string of up to `maximumLength` characters, mostly from the characters that matter to the code under
    /// test (`alphabet`), sometimes any Unicode scalar, so that both the delimiters and multi-byte UTF-8 come up.
    mutating func string(maximumLength: Int, alphabet: [Unicode.Scalar]) -> String {
        let length = number(below: maximumLength + 1)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<length where !isAtEnd {
            let choice = byte()
            if choice < 200 {
                scalars.append(alphabet[Int(choice) % alphabet.count])
            } else {
                // Any scalar: the low bits pick a plane-spanning value, surrogates skipped by the initializer.
                let raw = UInt32(byte()) | UInt32(byte()) << 8 | UInt32(choice & 0x01) << 16
                scalars.append(Unicode.Scalar(raw) ?? "\u{FFFD}")
            }
        }
        return String(scalars)
    }
}
