import FoundationEssentials
import PinpathHTTP
import Testing

@testable import PinpathAgent

/// The event references (the tables under `### Events` in the README and in docs/agent.md) against
/// ``EventCatalog``, the table of every event the agent writes.
@Suite("Event catalog")
struct EventCatalogTests {
    /// The documents with an event table, relative to the package.
    static let documents = ["README.md", "docs/agent.md"]

    /// Each event `document` lists and the fields its row lists, outside parentheses (which hold values and notes).
    static func documentedEvents(in document: String = "README.md") throws -> [(names: [String], fields: [String], levels: [String])] {
        let file = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: document)
        let text = try String(contentsOf: file, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "### Events"), "\(document) has no ### Events section")
        let section = lines[(start + 1)...].prefix { !$0.hasPrefix("## ") && !$0.hasPrefix("### ") }
        return section.filter { $0.hasPrefix("| `") }.map { row in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            return (
                names: codeSpans(in: cells[0], outsideParentheses: true), fields: codeSpans(in: cells[2], outsideParentheses: true),
                levels: cells.count > 3 ? codeSpans(in: cells[3], outsideParentheses: true) : []
            )
        }
    }

    /// The `code` spans of `text`, only those at parenthesis depth 0 when `outsideParentheses`.
    static func codeSpans(in text: String, outsideParentheses: Bool) -> [String] {
        var spans: [String] = []
        var depth = 0
        var current: String?
        for character in text {
            if var span = current {
                if character == "`" {
                    if depth == 0 || !outsideParentheses { spans.append(span) }
                    current = nil
                } else {
                    span.append(character)
                    current = span
                }
                continue
            }
            switch character {
            case "`": current = ""
            case "(": depth += 1
            case ")": depth -= 1
            default: break
            }
        }
        return spans
    }

    @Test("The README and docs/agent.md document every event of the catalog, and no other", arguments: documents)
    func everyEventDocumented(document: String) throws {
        let documented = try Self.documentedEvents(in: document).flatMap(\.names)
        #expect(Set(documented).count == documented.count, "\(document): an event is documented twice")
        #expect(Set(documented) == Set(EventCatalog.all.map(\.name)), "\(document)")
    }

    @Test(
        "The README and docs/agent.md list each event's fields as the catalog does, in order",
        arguments: EventCatalog.all, documents)
    func fieldsDocumented(kind: EventKind, document: String) throws {
        let rows = try Self.documentedEvents(in: document).filter { $0.names.contains(kind.name) }
        let row = try #require(rows.first, "\(kind.name) is not documented in \(document)")
        #expect(row.fields == kind.fields, "\(document): \(kind.name)")
        #expect(row.levels == kind.levels.map(\.name), "\(document): \(kind.name): the levels column")
    }

    @Test("The event builders write the catalog's fields")
    func buildersFollowTheCatalog() {
        #expect(AgentEvents.dropped(count: 1, reason: "queue_full", errorName: nil).fields.map(\.0) == EventCatalog.eventsDropped.fields)
        #expect(
            AgentEvents.metricsWriteFailed(file: "m.prom", error: "cannot create m.prom: Permission denied", errnoName: "EACCES").fields
                .map(\.0) == EventCatalog.metricsWriteFailed.fields)
        let result = ProbeResult(endpoint: "api", outcome: .failure, started: Date())
        #expect(AgentEvents.probeCompleted(result, connectivity: nil).fields.map(\.0) == EventCatalog.probeCompleted.fields)
        #expect(AgentEvents.probeCompleted(result, connectivity: nil).name == "probe.completed")
        #expect(AgentEvents.probeCompleted(result, connectivity: nil).fields.last! == ("connectivity", .null))
        #expect(AgentEvents.probeCompleted(result, connectivity: .intercepted).fields.last! == ("connectivity", .string("intercepted")))
        let portal = ConnectivityVerdict(state: .portal, reason: "redirected (302) to portal.example", timings: PhaseTimings())
        let url = URL(string: "http://192.0.2.10/generate_204?session=1")!
        let event = AgentEvents.connectivityChanged(portal, previous: nil, url: url)
        #expect(event.fields.map(\.0) == EventCatalog.connectivityChanged.fields)
        #expect(event.fields.first { $0.0 == "previous" }?.1 == .null)
        #expect(event.fields.first { $0.0 == "url" }?.1 == .string("http://192.0.2.10/generate_204"))
    }

    @Test("Levels follow the README's rule: a failed probe warns, a successful one informs; a reload with warnings warns")
    func levels() {
        for connectivity in [nil] + ConnectivityState.allCases.map(Optional.some) {
            // The connectivity state is context: it never changes a probe's level.
            let failure = ProbeResult(endpoint: "api", outcome: .failure, started: Date())
            #expect(AgentEvents.probeCompleted(failure, connectivity: connectivity).level == .warning)
            let success = ProbeResult(endpoint: "api", outcome: .success, started: Date())
            #expect(AgentEvents.probeCompleted(success, connectivity: connectivity).level == .info)
            let unreachable = ProbeResult(endpoint: "api", outcome: .unreachable, started: Date())
            #expect(AgentEvents.probeCompleted(unreachable, connectivity: connectivity).level == .warning)
        }
        #expect(AgentEvents.dropped(count: 1, reason: "queue_full", errorName: nil).level == .warning)
        let url = URL(string: "http://192.0.2.10/generate_204")!
        for state in ConnectivityState.allCases {
            let event = AgentEvents.connectivityChanged(ConnectivityVerdict(state: state, reason: "r"), previous: .full, url: url)
            #expect(event.level == (state == .full ? .info : state == .intercepted ? .error : .warning), "connectivity \(state)")
        }
        #expect(
            AgentEvents.metricsWriteFailed(file: "m.prom", error: "cannot create m.prom: Permission denied", errnoName: "EACCES").level
                == .error)
    }
}
