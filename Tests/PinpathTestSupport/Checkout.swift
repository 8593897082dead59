import Foundation

/// The repository the tests were built from, found from this file so that no test depends on the working
/// directory.
public enum Checkout {
    /// The checkout's root directory.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The path of `relative` in the checkout, such as `etc/pinpath.yaml`.
    public static func file(_ relative: String) -> String { "\(root)/\(relative)" }
}
