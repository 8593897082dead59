import FoundationEssentials
import PinpathHTTP
import PinpathSupport
import Testing

@testable import PinpathAgent

/// The table of endpoint keys (``EndpointKey/all``, with the keys of `expect:`) against the reference in
/// docs/configuration.md, and against what loading a configuration does with each key.
@Suite("Endpoint key table")
struct EndpointKeyTableTests {
    /// One row of the reference's "Endpoint keys" table.
    struct DocumentedKey: Equatable, CustomStringConvertible {
        let name: String
        let kinds: String
        let defaultValue: String
        var description: String { "\(name) | \(kinds) | \(defaultValue)" }
    }

    /// The rows of docs/configuration.md's `## Endpoint keys` table: key, kinds and default, code spans unwrapped.
    static func documentedKeys() throws -> [DocumentedKey] {
        let lines = try EventCatalogTests.lines(of: "docs/configuration.md")
        let start = try #require(lines.firstIndex(of: "## Endpoint keys"), "docs/configuration.md has no ## Endpoint keys section")
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("## ") }
        return section.filter { $0.hasPrefix("| `") }.map { row in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).replacing("`", with: "") }
            return DocumentedKey(name: cells[0], kinds: cells[1], defaultValue: cells[2])
        }
    }

    /// The code's table as the reference writes it: each endpoint key, `expect`'s keys after `expect`.
    static var codeKeys: [DocumentedKey] {
        EndpointKey.all.flatMap { key in
            [DocumentedKey(name: key.name, kinds: key.kinds.documented, defaultValue: key.documentedDefault)]
                + (key.name == "expect"
                    ? ResponseExpectation.Key.all.map {
                        DocumentedKey(name: "expect.\($0.name)", kinds: $0.kinds.documented, defaultValue: $0.documentedDefault)
                    } : [])
        }
    }

    @Test("The reference documents every endpoint key with its kinds and default, in the table's order, and no other")
    func referenceMatchesTable() throws {
        let documented = try Self.documentedKeys()
        #expect(Set(documented.map(\.name)).count == documented.count, "a key is documented twice")
        let code = Self.codeKeys
        for key in code where !documented.contains(key) { Issue.record("not documented as the code has it: \(key)") }
        for key in documented where !code.contains(key) { Issue.record("documented, but not so in the code: \(key)") }
        #expect(documented.map(\.name) == code.map(\.name), "the order differs")
    }

    @Test("The places: defaults take every key but name, url and address; a module every key but name, url, interval and address")
    func places() {
        let all = Set(EndpointKey.names(in: .endpoint))
        #expect(all == Set(EndpointKey.all.map(\.name)))
        #expect(Set(EndpointKey.names(in: .defaults)) == all.subtracting(["name", "url", "address"]))
        #expect(Set(EndpointKey.names(in: .module)) == all.subtracting(["name", "url", "interval", "address"]))
    }

    /// A URL of `kind` that loads with no other key.
    static func url(of kind: ServiceKind) -> String {
        switch kind {
        case .tls, .tcp: "\(kind.rawValue)://127.0.0.1:5432"
        default: "\(kind.rawValue)://127.0.0.1/"
        }
    }

    /// A value of `key` its reader accepts on a kind it applies to.
    static let sampleValues: [String: String] = [
        "method": "POST", "headers": "{X-Team: core}", "body": "hello", "body_file": "body.txt", "follow_redirects": "false",
        "starttls": "true", "servername": "db.example", "send": "PING", "client_certificate": "client.pem",
    ]

    @Test(
        "A key with a refusal is refused, at its line, on every probed kind it does not apply to",
        arguments: EndpointKey.all.filter { $0.refusal != nil }.map(\.name))
    func refusedOnOtherKinds(_ name: String) throws {
        let key = try #require(EndpointKey.named(name))
        let value = try #require(Self.sampleValues[name], "no sample value for \(name)")
        let refusal = try #require(key.refusal)
        for kind in ServiceKind.probed where !key.applies(to: kind) {
            let starttls = kind.upgradesWithSTARTTLS && name != "starttls" ? "\n    starttls: true" : ""
            let yaml = "endpoints:\n  - name: e\n    url: \(Self.url(of: kind))\(starttls)\n    \(name): \(value)\n"
            let problems = configurationProblems(yaml)
            let expected = "test.yaml:\(starttls.isEmpty ? 4 : 5):\(7 + name.count): endpoints[0].\(name): \(refusal(kind))"
            #expect(problems == [expected], "\(name) on \(kind.rawValue)")
        }
    }

    @Test(
        "A default of a key is applied only to the kinds it applies to, and refused on none",
        arguments: EndpointKey.all.filter { $0.refusal != nil && $0.localRead == nil }.map(\.name))
    func defaultsFollowKinds(_ name: String) throws {
        let key = try #require(EndpointKey.named(name))
        let value = try #require(Self.sampleValues[name])
        var yaml = "defaults:\n  \(name): \(value)\nendpoints:\n"
        let kinds = ServiceKind.probed
        for (index, kind) in kinds.enumerated() {
            yaml += "  - name: e\(index)\n    url: \(Self.url(of: kind))\n"
            if kind.upgradesWithSTARTTLS && name != "starttls" { yaml += "    starttls: true\n" }
        }
        let configuration = try loadConfiguration(yaml)
        for (endpoint, kind) in zip(configuration.endpoints, kinds) {
            let shown = endpoint.effectiveValues.map(\.key)
            // The keys --effective shows only where set: applied, they show; not applied, they do not.
            if ["servername", "send"].contains(name) { #expect(shown.contains(name) == key.applies(to: kind), "\(name) on \(kind)") }
        }
        #expect(configuration.endpoints.count == kinds.count)
    }

    @Test("--effective shows each key's documented default for an endpoint that writes none")
    func effectiveDefaults() throws {
        let endpoint = try #require(try loadConfiguration("endpoints:\n  - name: e\n    url: https://127.0.0.1/\n").endpoints.first)
        let shown = Dictionary(endpoint.effectiveValues.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        func text(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let text): text
            case .int(let number): "\(number)"
            case .bool(let flag): "\(flag)"
            case .array(let items): "[" + items.compactMap(text).joined(separator: ", ") + "]"
            default: nil
            }
        }
        // Defaults the reference describes rather than gives as a value.
        let described: Set = [
            "required", "none", "by hosts", "the file's proxy", "the URL's host", "a 2xx status", "in the certificate's file",
            "required true",
        ]
        let literal = EndpointKey.all.filter { !described.contains($0.documentedDefault) }
        for key in literal { #expect(text(shown[key.name]) == key.documentedDefault, "\(key.name)") }
        #expect(literal.count == 8, "\(literal.map(\.name))")
        guard case .object(let expectation) = shown["expect"] else {
            Issue.record("no expect")
            return
        }
        #expect(text(expectation.first { $0.0 == "status" }?.1) == ResponseExpectation.Key.named("status")?.documentedDefault)
    }

    @Test("A secret key's value is never shown by --effective")
    func secretKeysRedacted() {
        #expect(EndpointKey.all.filter(\.isSecret).map(\.name) == ["client_key_password"])
    }
}
