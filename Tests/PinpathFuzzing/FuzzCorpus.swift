import FoundationEssentials

/// The committed inputs of a fuzz target: its seed corpus (`fuzz/corpus/NAME`) and the reproducers of
/// everything it ever found (`fuzz/regressions/NAME`), and its libFuzzer dictionary (`fuzz/dictionaries`).
public struct FuzzCorpus: Sendable {
    /// One committed input.
    public struct Input: Sendable, CustomStringConvertible {
        /// The path from the repository's root, as a failure should name it.
        public let path: String
        public let bytes: [UInt8]
        public var description: String { path }
    }

    public let target: FuzzTarget
    /// The seeds, then the regressions, each folder sorted by file name.
    public let inputs: [Input]
    /// The dictionary's tokens (`"token"` lines, with `\xNN` and `\\` escapes), for the seeded mutations.
    public let dictionary: [[UInt8]]

    /// Reads the committed files; the repository is found from this source file, not the working directory.
    public init(_ target: FuzzTarget) throws {
        self.target = target
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var inputs: [Input] = []
        for folder in ["fuzz/corpus/\(target.rawValue)", "fuzz/regressions/\(target.rawValue)"] {
            let directory = root.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where !name.hasPrefix(".") {
                let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
                inputs.append(Input(path: "\(folder)/\(name)", bytes: Array(bytes)))
            }
        }
        self.inputs = inputs
        let dictionaryFile = root.appendingPathComponent("fuzz/dictionaries/\(target.rawValue).dict")
        let text = (try? String(contentsOf: dictionaryFile, encoding: .utf8)) ?? ""
        dictionary = text.split(separator: "\n").compactMap(Self.token)
    }

    /// `"a\x00b"` → the bytes; comments and blank lines → nil.
    static func token(_ line: Substring) -> [UInt8]? {
        guard let open = line.firstIndex(of: "\""), let close = line.lastIndex(of: "\""), open < close,
            !line.hasPrefix("#")
        else { return nil }
        var bytes: [UInt8] = []
        var iterator = Array(line[line.index(after: open)..<close].utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "\\"), let escaped = iterator.next() else {
                bytes.append(byte)
                continue
            }
            if escaped == UInt8(ascii: "x"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else {
                bytes.append(escaped)
            }
        }
        return bytes
    }
}
