import Foundation

/// A directory of its own for one test, removed with everything in it when the value goes away: the one way
/// the tests make temporary paths, so that tests running in parallel never share one.
public final class TemporaryDirectory: @unchecked Sendable {
    /// `@unchecked Sendable`: `path` is a constant; the directory's files are the test's to coordinate.
    public let path: String

    /// Makes `/tmp/pinpath-<prefix>-XXXXXX` (mkdtemp: a fresh name, mode 0700).
    public init(_ prefix: String = "test") throws {
        var template = Array("\(NSTemporaryDirectory())/pinpath-\(prefix)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The path of `name` in the directory.
    public func file(_ name: String) -> String { "\(path)/\(name)" }

    /// The file's text, or nil if it does not exist.
    public func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: file(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The file's lines, without their newlines.
    public func lines(_ name: String) -> [Substring] {
        (read(name) ?? "").split(separator: "\n", omittingEmptySubsequences: false).dropLast()
    }
}
