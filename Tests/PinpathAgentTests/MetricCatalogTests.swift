import FoundationEssentials
import Testing

@testable import PinpathAgent

/// The README's metric table (the one headed `| metric | type | meaning |`) against what the renderer writes: every
/// family a full snapshot renders is documented, with its type, and the table names no family that is not written.
@Suite("Metric catalog")
struct MetricCatalogTests {
    /// A snapshot with every optional family present: OCSP, connectivity, a failure category.
    static var fullSnapshot: MetricsSnapshot {
        var snapshot = MetricsSnapshot(endpoints: [
            MetricsSnapshot.Endpoint(
                name: "api", probeSucceeded: false, probeDuration: 0.02, phaseDurations: [("tls", 0.01)], statusCode: 0,
                tlsVersion: "TLSv1.3", failureCategory: .tlsExpired, state: .down, earliestCertificateExpiry: 1,
                lastChainExpiry: 1, ocspResponseStatus: 0, ocspStatus: "good", ocspNextUpdate: 1)
        ])
        snapshot.pathStatus = .reachable
        snapshot.connectivity = (.full, 0.1)
        snapshot.targets = [("api.example", true)]
        // The `/probe` route's families, with a probe served and a target refused.
        let route = ProbeRouteMetrics()
        route.startServing()
        let probed = ProbeResult(endpoint: "", outcome: .success, started: Date())
        route.answered(.probed(probed, log: nil), module: "https_2xx", seconds: 0.1)
        route.answered(.refused("not allowed"), module: "https_2xx", seconds: 0.1)
        snapshot.probeRoute = route.snapshot()
        return snapshot
    }

    /// The table's rows: the name in the first cell (labels cut off) and the type.
    static func documentedRows() throws -> [(name: String, type: String, row: String)] {
        let readme = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "README.md")
        let lines = try String(contentsOf: readme, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "| metric | type | meaning |"), "the README has no metric table")
        return lines[(start + 2)...].prefix { $0.hasPrefix("|") }.map { row in
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            let name = cells[0].trimmingCharacters(in: ["`"]).split(separator: "{").first.map(String.init) ?? ""
            return (name, cells[1], String(row))
        }
    }

    /// `# TYPE name type` of every family rendered.
    static func renderedFamilies() -> [(name: String, type: String)] {
        MetricsExposition.render(fullSnapshot).split(separator: "\n").compactMap { line in
            guard line.hasPrefix("# TYPE ") else { return nil }
            let parts = line.split(separator: " ")
            return (String(parts[2]), String(parts[3]))
        }
    }

    @Test("Every family the agent writes is in the README's metric table with its type, and the table lists no other")
    func readmeMatchesRenderer() throws {
        let rows = try Self.documentedRows()
        let rendered = Self.renderedFamilies()
        try #require(!rows.isEmpty && !rendered.isEmpty)
        let table = rows.map(\.row).joined(separator: "\n")
        for family in rendered {
            if let row = rows.first(where: { $0.name == family.name }) {
                #expect(row.type == family.type, "\(family.name): the README says \(row.type), the renderer \(family.type)")
            } else {
                // A family documented inside another's row (the connectivity check's duration).
                #expect(table.contains("`\(family.name)`"), "\(family.name) is written but not in the README's metric table")
            }
        }
        let names = Set(rendered.map(\.name))
        for row in rows {
            #expect(names.contains(row.name), "the README lists \(row.name), which the agent does not write")
        }
    }
}
