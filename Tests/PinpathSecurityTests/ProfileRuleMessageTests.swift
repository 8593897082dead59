import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathSecurity

/// Round 2: a profile rule's message quotes names from the certificate (a SAN, a name constraint), and
/// `CommandFailure.report` prints it keeping line feeds. `rfc5280.name_constraints_wildcards` quoted the leaf's
/// wildcard raw, so a SAN holding ESC or a line feed could paint the terminal; and the shared quoting escaped C0
/// controls but let C1 controls and bidi overrides through. Each rule's certificate text now goes through
/// `UntrustedText`.
@Suite("Profile rule messages escape certificate text")
struct ProfileRuleMessageTests {
    /// ESC, a line feed, a C1 control (NEL) and a bidi override, with what the message must show instead.
    static let hostile: [UInt8] = Array("x\u{1B}[2K\nok\u{85}\u{202E}.example".utf8)
    static let shown = #"x\x1b[2K\x0aok\x85\u{202e}.example"#

    /// DER: `tag`, a short or long length, `content`.
    static func der(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let length: [UInt8] = content.count < 0x80 ? [UInt8(content.count)] : [0x81, UInt8(content.count)]
        return [tag] + length + content
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02X", $0) }.joined() }

    @Test("A wildcard SAN into an excluded subtree is quoted escaped, on one line (rfc5280.name_constraints_wildcards)")
    func wildcardIntoExcludedSubtree() throws {
        let pki = NamesPKI.shared
        // SubjectAltName ::= SEQUENCE { dNSName [2] "*.<hostile>" }; NameConstraints ::= SEQUENCE { excluded [1]
        // SEQUENCE { GeneralSubtree SEQUENCE { dNSName [2] "admin.<hostile>" } } }.
        let san = Self.der(0x30, Self.der(0x82, Array("*.".utf8) + Self.hostile))
        let constraints = Self.der(0x30, Self.der(0xA1, Self.der(0x30, Self.der(0x82, Array("admin.".utf8) + Self.hostile))))
        let root = try pki.root("msg-root")
        let ca = try pki.intermediate("msg-ca", issuer: "msg-root", extensions: ["nameConstraints=critical,DER:\(Self.hex(constraints))"])
        let leaf = try pki.leaf("msg-leaf", issuer: "msg-ca", subject: "/CN=wild", extensions: ["subjectAltName=DER:\(Self.hex(san))"])
        var path = VerifiedPath(chain: [leaf, ca, root], servedCount: 2, endsAtAnchor: true, host: "www.example", maximumDepth: nil)
        guard case .failsToMeetRule(let violation) = NameConstraintsOnWildcards().evaluate(&path) else {
            Issue.record("the wildcard into the excluded subtree was accepted")
            return
        }
        #expect(
            violation.message == #"the leaf's wildcard "*.\#(Self.shown)" matches the excluded subtree "admin.\#(Self.shown)""#,
            "\(violation.message)")
        #expect(!violation.message.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}" })
    }

    @Test("Names quoted by the other rules escape C1 controls and bidi overrides too, and quotes and backslashes")
    func quotedNames() {
        #expect(DNSNameSyntax.quoted(Self.hostile) == "\"\(Self.shown)\"")
        #expect(DNSNameSyntax.quoted(Array(#"a"b\c"#.utf8)) == #""a\x22b\x5cc""#)
        #expect(DNSNameSyntax.quoted(Array(repeating: UInt8(ascii: "a"), count: 300)).count < 300)
    }
}
