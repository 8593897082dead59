import PinpathHTTP
import PinpathSupport
import PinpathYAML

/// What a response must look like for a probe to succeed (`expect:`).
package struct ResponseExpectation: Sendable, Equatable {
    /// Accepted status codes, as inclusive ranges (`204` is `204...204`). Default `200-299`.
    package let statuses: [ClosedRange<Int>]
    /// Text the body must contain, if set (`body_contains`).
    package let bodyContains: String?
    /// A regular expression the body must match somewhere, if set (`body_matches`).
    package let bodyMatches: BodyPattern?
    /// Text the server's greeting (SMTP, IMAP, POP3, FTP) or a `tcp://` exchange's answer must contain, if set
    /// (`banner`).
    package let banner: String?
    /// Response header fields that must be present and match, in file order (`headers`).
    package let headers: [HeaderExpectation]
    /// The longest a probe may take, all phases together (`max_duration`); longer fails as `too_slow`.
    package let maxDuration: Duration?

    /// One `expect.headers` entry: the field must be present and its value contain the text, or match the
    /// pattern when written `/…/`.
    package struct HeaderExpectation: Sendable, Equatable {
        /// The field name as written (compared without regard to case).
        package let name: String
        /// The text the value must contain.
        package let contains: String?
        /// The expression the value must match somewhere.
        package let matches: BodyPattern?

        /// Whether `value` (the field's value, `nil` when absent) passes.
        /// - Throws: ``PatternMatchError`` when the pattern could not decide within its limits.
        package func accepts(_ value: String?) throws(PatternMatchError) -> Bool {
            guard let value, contains.map(value.contains) ?? true else { return false }
            return try matches?.matches(value) ?? true
        }

        /// `contains "text"` or `matches /pattern/`, for messages.
        package var requirement: String {
            matches.map { "match /\($0.source)/" } ?? "contain \"\(contains ?? "")\""
        }
    }

    /// Creates an expectation; by default any 2xx status and no body check.
    package init(
        statuses: [ClosedRange<Int>] = [200...299], bodyContains: String? = nil, bodyMatches: BodyPattern? = nil, banner: String? = nil,
        headers: [HeaderExpectation] = [], maxDuration: Duration? = nil
    ) {
        self.statuses = statuses
        self.bodyContains = bodyContains
        self.bodyMatches = bodyMatches
        self.banner = banner
        self.headers = headers
        self.maxDuration = maxDuration
    }

    /// Whether `status` is one of ``statuses``.
    package func accepts(status: Int) -> Bool { statuses.contains { $0.contains(status) } }

    /// Whether `body` passes both body checks (true when there are none).
    /// - Throws: ``PatternMatchError`` when `body_matches` could not decide within its limits.
    package func accepts(body: String) throws(PatternMatchError) -> Bool {
        guard bodyContains.map(body.contains) ?? true else { return false }
        return try bodyMatches?.matches(body) ?? true
    }

    /// Whether judging a response runs a pattern search (`body_matches`, a `/pattern/` header), which may take
    /// up to the ``PatternLimits`` of CPU time: such a probe judges its response in a ``PatternSearchLane``.
    package var searchesPatterns: Bool { bodyMatches != nil || headers.contains { $0.matches != nil } }

    /// Whether the body is needed at all: without body checks a probe can skip reading it.
    package var checksBody: Bool { bodyContains != nil || bodyMatches != nil }

    /// The statuses as written back: `200-299, 304`.
    package var statusDescription: String {
        statuses.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ", ")
    }

    /// One key of `expect:`: the kinds it applies to, as ``EndpointKey`` rows have them, and how `--effective`
    /// shows it.
    struct Key: Sendable {
        let name: String
        let kinds: EndpointKey.Kinds
        /// The default as the reference shows it.
        let documentedDefault: String
        /// What `--effective` shows of it.
        let shown: @Sendable (ResponseExpectation) -> [(key: String, value: JSONValue)]

        /// The refusal of a value of it on `kind`, a kind it does not apply to.
        func refusal(on kind: ServiceKind) -> String {
            let reason =
                kinds == .http
                ? "\(name) applies to http:// and https:// URLs only"
                : "banner applies to the kinds whose server speaks first (smtp, imap, pop3, ftp and their TLS variants) and to tcp://"
            return "\(reason); this URL is \(kind.rawValue)://"
        }

        /// The row of `name`, if it is a key of `expect:`.
        static func named(_ name: String) -> Key? { all.first { $0.name == name } }

        /// Every key of `expect:`, in the order of the reference and of `--effective`.
        static let all: [Key] = [
            Key(name: "status", kinds: .http, documentedDefault: "200-299") { [("status", .string($0.statusDescription))] },
            Key(name: "body_contains", kinds: .http, documentedDefault: "none") {
                $0.bodyContains.map { [("body_contains", .string($0))] } ?? []
            },
            Key(name: "body_matches", kinds: .http, documentedDefault: "none") {
                $0.bodyMatches.map { [("body_matches", .string($0.source))] } ?? []
            },
            Key(name: "headers", kinds: .http, documentedDefault: "none") { expectation in
                expectation.headers.map { ("headers.\($0.name)", JSONValue.string($0.requirement)) }
            },
            Key(name: "banner", kinds: .greetingOrTCP, documentedDefault: "none") { $0.banner.map { [("banner", .string($0))] } ?? [] },
            Key(name: "max_duration", kinds: .all, documentedDefault: "none") {
                $0.maxDuration.map { [("max_duration", .string(DurationSyntax.format($0)))] } ?? []
            },
        ]
    }

    /// What `--effective` shows for a probe of `kind`: the keys that apply to it.
    func effectiveValues(for kind: ServiceKind) -> [(String, JSONValue)] {
        Key.all.filter { $0.kinds.contains(kind) }.flatMap { $0.shown(self) }.map { ($0.key, $0.value) }
    }

    /// Reads `expect:` of a probe of `kind`, which decides which keys apply (``Key/kinds``; all, for a URL not
    /// understood): the others are refused at their line. `nil` when it is not a mapping.
    init?(reading node: Node, at keyPath: String, in kind: ServiceKind?, _ decoder: ConfigurationDecoder) {
        guard let fields = decoder.mapping(node, keyPath, known: Key.all.map(\.name)) else { return nil }
        if let kind {
            for key in Key.all where !key.kinds.contains(kind) {
                guard let keyNode = fields[key.name] else { continue }
                decoder.report(.invalidValue, at: keyNode, fields.path(key.name), key.refusal(on: kind))
            }
        }
        var statuses: [ClosedRange<Int>] = [200...299]
        if let node = fields["status"],
            let items = decoder.list(node, fields.path("status"), of: "status codes or ranges", allowingSingle: true)
        {
            statuses = items.enumerated().compactMap { index, item in
                decoder.statusRange(item, "\(fields.path("status"))[\(index)]")
            }
            if items.isEmpty {
                decoder.report(
                    .invalidValue, at: node, fields.path("status"),
                    "the list is empty; give at least one status (200) or range (\"200-299\")")
            }
        }
        let contains = fields["body_contains"].flatMap { decoder.string($0, fields.path("body_contains"), "text") }
        let matches = fields["body_matches"].flatMap { node in
            decoder.parse(node, fields.path("body_matches"), "a regular expression") { try decoder.pattern($0) }
        }
        var banner: String?
        if let node = fields["banner"], let text = decoder.string(node, fields.path("banner"), "text") {
            if text.isEmpty {
                decoder.report(.invalidValue, at: node, fields.path("banner"), "the text is empty; remove banner to accept any greeting")
            } else {
                banner = text
            }
        }
        let headers = fields["headers"].flatMap { decoder.headerExpectations($0, fields.path("headers")) } ?? []
        let maxDuration = fields["max_duration"].flatMap { decoder.duration($0, fields.path("max_duration"), atLeast: .milliseconds(1)) }
        self.init(
            statuses: statuses, bodyContains: contains, bodyMatches: matches, banner: banner, headers: headers, maxDuration: maxDuration)
    }
}

extension ConfigurationDecoder {
    /// `expect.headers`: `Name: text` (the value contains it) or `Name: /pattern/` (the value matches it).
    func headerExpectations(_ node: Node, _ keyPath: String) -> [ResponseExpectation.HeaderExpectation]? {
        guard let entries = namedEntries(node, keyPath) else { return nil }
        var seen: Set<String> = []
        var expectations: [ResponseExpectation.HeaderExpectation] = []
        for (name, key, value) in entries {
            let path = Self.keyPath(keyPath, name)
            guard seen.insert(name.lowercased()).inserted else {
                report(.duplicate, at: key, path, "the header \(name) is given twice (names are compared without regard to case)")
                continue
            }
            guard let text = string(value, path, "text, or a /regular expression/") else { continue }
            if text.count >= 2, text.hasPrefix("/"), text.hasSuffix("/") {
                guard
                    let pattern = parse(value, path, "a regular expression", { _ in try pattern(String(text.dropFirst().dropLast())) })
                else { continue }
                expectations.append(.init(name: name, contains: nil, matches: pattern))
            } else {
                expectations.append(.init(name: name, contains: text, matches: nil))
            }
        }
        return expectations
    }

    /// `204`, `"200-299"` or `"2xx"`, within 100…599.
    func statusRange(_ node: Node, _ keyPath: String) -> ClosedRange<Int>? {
        guard let text = string(node, keyPath, "a status code or range") else { return nil }
        let bounds: (Int, Int)?
        let pieces = text.split(separator: "-", omittingEmptySubsequences: false)
        if pieces.count == 1, pieces[0].count == 3, pieces[0].hasSuffix("xx"), let first = Int(pieces[0].prefix(1)) {
            bounds = (first * 100, first * 100 + 99)
        } else if pieces.count == 1, let code = Int(pieces[0]) {
            bounds = (code, code)
        } else if pieces.count == 2, let low = Int(pieces[0]), let high = Int(pieces[1]) {
            bounds = (low, high)
        } else {
            bounds = nil
        }
        guard let (low, high) = bounds, (100...599).contains(low), (100...599).contains(high), low <= high else {
            report(
                .invalidValue, at: node, keyPath,
                "\(ConfigurationProblem.quoted(text)) is not a status code or range (use 200, \"200-299\" or \"2xx\", within 100-599, low to high)"
            )
            return nil
        }
        return low...high
    }
}

extension ResponseExpectation: ConfigurationReadable {}
