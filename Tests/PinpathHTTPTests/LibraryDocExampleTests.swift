import Foundation
import Testing

/// docs/library.md's request-core example (which scripts/check-library-example builds as a user's package)
/// against the code: it handles every ``HTTPError/Code``, shows a private CA, and force-unwraps nothing.
@Suite("docs/library.md example")
struct LibraryDocExampleTests {
    static let root = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func example() throws -> String {
        let text = try String(contentsOf: root.appending(path: "docs/library.md"), encoding: .utf8)
        let start = try #require(text.range(of: "<!-- library-example:begin -->"), "docs/library.md has no library example")
        let end = try #require(text.range(of: "<!-- library-example:end -->"))
        return String(text[start.upperBound..<end.lowerBound])
    }

    @Test("The catch names every HTTPError code the request core declares")
    func everyErrorCode() throws {
        let source = try String(
            contentsOf: Self.root.appending(path: "Sources/PinpathHTTP/Errors/FailureCategory.swift"), encoding: .utf8)
        // FailureCategory's first group is the request core's: the codes an HTTPError can have.
        let start = try #require(source.range(of: "// The request core's"))
        let end = try #require(source.range(of: "// The agent's probes"))
        let codes = source[start.upperBound..<end.lowerBound].matches(of: /\n    case (\w+)/).map { String($0.output.1) }
        #expect(codes.count > 10, "the codes were found in FailureCategory.swift")
        let example = try Self.example()
        let missing = codes.filter { !example.contains(".\($0),") && !example.contains(".\($0):") }
        #expect(missing.isEmpty, "not handled in docs/library.md: \(missing)")
    }

    @Test("A private CA with a host policy, and no force-unwrap")
    func privateCAWithoutForceUnwrap() throws {
        let example = try Self.example()
        #expect(example.contains("TrustStore(caFile:"))
        #expect(example.contains("HostPolicy(patterns:") && example.contains("trustStore:"))
        #expect(example.firstMatch(of: /[\w)\]]!(?!=)/) == nil, "a force-unwrap in the example")
    }
}
