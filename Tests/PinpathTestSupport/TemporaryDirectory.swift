import Foundation

/// A directory of its own for one test, removed with everything in it when the value goes away.
final class TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("\(NSTemporaryDirectory())/pinpath-agent-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    /// The file's text, or nil if it does not exist.
    func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: file(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The file's lines, without their newlines.
    func lines(_ name: String) -> [Substring] {
        (read(name) ?? "").split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    }
}
