import PinpathYAML
import Testing

@testable import PinpathAgent

/// The pure parts of `pinpath modules --from-blackbox`: quoting text from the converted file, Go durations, and the
/// choice of a STARTTLS kind. The command itself is tested as a process (PinpathEndToEndTests).
@Suite("blackbox conversion: quoting, durations, STARTTLS kinds")
struct BlackboxConversionLogicTests {
    @Test(
        "Quoted text reads back as the same text, on one line",
        arguments: [
            "plain", "a: b", "x\ny", "# not a comment", "\"quoted\" and \\back", "tab\there", "bell\u{7}", "del\u{7F}",
            "c1\u{85}", "line\u{2028}sep", "bom\u{FEFF}", "rtl\u{202E}txt", "isolate\u{2066}x\u{2069}", "é and 👴🏿", "---", "- item",
            "&anchor *alias", "!!binary", "%directive", "", " spaced ", "null", "true", "{flow: [x]}", "e\u{301}\"",
        ])
    func quotedRoundTrip(text: String) throws {
        let line = "key: \(ConvertedYAML.quoted(text))"
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" })
        let root = try #require(try Parser(yaml: line).singleRoot()?.mapping)
        #expect(root["key"]?.string == text)
    }

    @Test("Keys: pinpath's own words plain, anything else quoted and read back")
    func keys() throws {
        let lines = ConvertedYAML.lines(
            [
                .init(key: "timeout", value: .plain("5s")), .init(key: "true", value: .text("x")),
                .init(key: "Content-Type", value: .text("a")), .init(key: "a: b\nc", value: .mapping([])),
            ], indent: 0)
        #expect(lines[0] == "timeout: 5s")
        let root = try #require(try Parser(yaml: lines.joined(separator: "\n")).singleRoot()?.mapping)
        #expect(root.compactMap(\.key.string) == ["timeout", "true", "Content-Type", "a: b\nc"])
    }

    @Test(
        "Go durations in pinpath's syntax, rounded up to whole milliseconds",
        arguments: [
            ("5s", "5s", true), ("1m30s", "90s", true), ("1.5s", "1500ms", true), ("1.1s", "1100ms", true), (".5m", "30s", true),
            ("250ms", "250ms", true), ("2h", "2h", true),
            ("100us", "1ms", false), ("1500000ns", "2ms", false),
        ])
    func goDurations(text: String, expected: String, isExact: Bool) throws {
        let duration = try #require(GoDuration(text))
        #expect(duration.text == expected)
        #expect(duration.isExact == isExact)
    }

    @Test("Not Go durations", arguments: ["", "5", "5 s", "-5s", "5x", "s", "0s", "1e3s", "99999h"])
    func notGoDurations(text: String) {
        #expect(GoDuration(text) == nil)
    }

    @Test("The STARTTLS kind by what the exchange sends before it")
    func startTLSKinds() {
        func kind(_ sends: [String]) -> String? {
            let steps = sends.map { Node.Mapping([(Node.scalar(.init("send")), Node.scalar(.init($0)))]) }
            return ConvertedModule.startTLSKind(steps[...])
        }
        #expect(kind(["EHLO prober\r", "STARTTLS\r"]) == "smtp")
        #expect(kind([". STARTTLS"]) == "imap")
        #expect(kind(["STLS"]) == "pop3")
        #expect(kind(["AUTH TLS"]) == "ftp")
        #expect(kind(["\u{0}\u{0}\u{0}\u{8}"]) == nil)
        #expect(kind([]) == nil)
    }

    @Test("Several fail_if_body_not_matches_regexp patterns: one body_matches that needs every one, anywhere in the body")
    func severalBodyPatterns() throws {
        let yaml = """
            modules:
              both:
                prober: http
                http:
                  fail_if_body_not_matches_regexp: ["ready", "version [0-9]+"]
            """
        let output = try BlackboxModuleConversion.convert(yaml: yaml, file: "blackbox.yml")
        let root = try #require(try Parser(yaml: output).singleRoot()?.mapping)
        let source = try #require(root["modules"]?.mapping?["both"]?.mapping?["expect"]?.mapping?["body_matches"]?.string, "\(output)")
        let pattern = try BodyPattern(source)
        #expect(try pattern.matches("version 12\nall ready"))
        #expect(try pattern.matches("ready, version 3"))
        #expect(try !pattern.matches("ready"))
        #expect(try !pattern.matches("version 3"))
    }

    @Test("Two secrets whose names read the same get two variables; a second header of one name is a comment")
    func distinctVariables() throws {
        let yaml = """
            modules:
              a-b:
                prober: http
                http: {bearer_token: s3cret-one}
              a_b:
                prober: http
                http:
                  bearer_token: s3cret-two
                  headers: {authorization: s3cret-three}
            """
        let output = try BlackboxModuleConversion.convert(yaml: yaml, file: "blackbox.yml")
        #expect(output.contains("Bearer ${BLACKBOX_A_B_AUTHORIZATION}"))
        #expect(output.contains("Bearer ${BLACKBOX_A_B_AUTHORIZATION_2}"))
        #expect(output.contains("# headers: not converted: a second \"authorization\" header: the first one written is kept"))
        #expect(!output.contains("s3cret"), "\(output)")
    }

}
