import Foundation
import Synchronization
import Testing

/// A directory of files that a bash script generates once per test run (a PKI, chains for a rule), under the
/// temporary directory, named with the process ID, and removed when the process exits.
public enum GeneratedDirectory {
    private static let made = Mutex<[String]>([])

    /// Makes the directory `PREFIX-PID` afresh, runs `script` with it as `$1` (then `arguments`), and returns
    /// its path. A failure is recorded as a test issue naming `what` (every test that needs the files then
    /// fails on a clear message rather than a cascade of missing files), and the path is returned anyway.
    public static func make(_ prefix: String, what: String, script: String, arguments: [String] = []) -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(getpid())").path
        let first = made.withLock { directories in
            defer { directories.append(directory) }
            return directories.isEmpty
        }
        if first { atexit { GeneratedDirectory.removeAll() } }
        do {
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Shell.check(["/bin/bash", "-c", script, prefix, directory] + arguments)
        } catch {
            Issue.record("cannot generate \(what): \(error)")
        }
        return directory
    }

    private static func removeAll() {
        for directory in made.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: directory) }
    }
}
