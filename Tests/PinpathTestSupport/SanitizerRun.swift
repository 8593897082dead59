import Foundation

/// Which sanitizer the tests run under (`PINPATH_SANITIZER`, set by scripts/sanitize), if any.
public enum SanitizerRun {
    /// `address`, `thread`, or `nil` for a normal build.
    public static let name: String? = ProcessInfo.processInfo.environment["PINPATH_SANITIZER"]

    /// Whether resident memory means what an RSS assertion assumes. Under AddressSanitizer it does not: freed
    /// blocks wait in its quarantine (256 MiB by default) and glibc's malloc options do not apply, so RSS
    /// measures the sanitizer, not the agent (seen: +16 MiB in the soak, +127 MiB in the memory test).
    public static var residentMemoryIsMeaningful: Bool { name != "address" }
}
