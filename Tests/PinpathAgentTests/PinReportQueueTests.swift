import Foundation
import PinpathHTTP
import PinpathSupport
import PinpathTestSupport
import Synchronization
import Testing

@testable import PinpathAgent

/// ``PinReportDelivery`` in process, against a real collector on loopback (plain http: the policy side is
/// `PinReportDeliveryTests`'): the bounded queue and its drop count, and the bounded stop.
@Suite("Pin failure report queue", .serialized)
struct PinReportQueueTests {
    /// The events a delivery writes, kept in order.
    final class Written: Sendable {
        private let events = Mutex<[AgentEvent]>([])
        func append(_ event: AgentEvent) { events.withLock { $0.append(event) } }
        var all: [AgentEvent] { events.withLock { $0 } }

        func waitForCount(_ count: Int, timeout: Duration = .seconds(20)) async throws {
            let deadline = ContinuousClock.now + timeout
            while all.count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            guard all.count >= count else { throw ShellError(description: "\(all.count) events, expected \(count): \(all.map(\.name))") }
        }
    }

    func jobs(_ count: Int, to url: String) throws -> [PinReportJob] {
        let collector = ReportCollector(url: try #require(URL(string: url)), security: nil, proxies: .direct)
        return (0..<count).map { index in
            PinReportJob(
                endpoint: "e\(index)", hostname: "h\(index).test", port: 443, body: Array(#"{"n":\#(index)}"#.utf8), collector: collector)
        }
    }

    static func field(_ event: AgentEvent, _ name: String) -> JSONValue? { event.fields.first { $0.0 == name }?.1 }

    @Test("A full queue drops the newest reports; the next event of that collector counts them; the kept ones are sent in order")
    func fullQueueDropsNewest() async throws {
        let directory = try TemporaryDirectory()
        let collector = try RecordingServer(directory: directory.path, failing: (503, Int.max))
        defer { collector.stop() }
        let session = try Session()
        defer { session.shutdown() }
        let written = Written()
        let delivery = PinReportDelivery(
            session: session, capacity: 2, retry: ReportRetry(attempts: 2, firstDelay: .milliseconds(200))
        ) { written.append($0) }
        delivery.submit(try jobs(5, to: "\(collector.origin)/r"))
        try await written.waitForCount(2)

        let events = written.all
        #expect(events.map(\.name) == ["report.delivery_failed", "report.delivery_failed"])
        #expect(events.map { Self.field($0, "endpoint") } == [.string("e0"), .string("e1")], "the first two kept, in order")
        #expect(events.map { Self.field($0, "dropped") } == [.int(3), .int(0)])
        #expect(events.map { Self.field($0, "attempts") } == [.int(2), .int(2)])
        #expect(collector.requests.map(\.body) == [#"{"n":0}"#, #"{"n":0}"#, #"{"n":1}"#, #"{"n":1}"#])
        await delivery.shutdown(grace: .zero)
    }

    /// Attacker's review of issue 26: `/probe` pin failures filled the one queue of 100, and a real endpoint's
    /// report was dropped. Target probe reports now have their own share, and endpoint reports go first.
    @Test("Target probe reports that fill their share leave room for an endpoint's report, which is sent before theirs")
    func targetProbesCannotCrowdOutEndpoints() async throws {
        let directory = try TemporaryDirectory()
        let collector = try RecordingServer(directory: directory.path, failing: (503, Int.max))
        defer { collector.stop() }
        let session = try Session()
        defer { session.shutdown() }
        let written = Written()
        let delivery = PinReportDelivery(
            session: session, capacity: 2, retry: ReportRetry(attempts: 1, firstDelay: .milliseconds(200))
        ) { written.append($0) }
        let probes = try jobs(5, to: "\(collector.origin)/r").map { job in
            var job = job
            job.origin = .targetProbe
            return job
        }
        delivery.submit(probes)
        let endpoint = PinReportJob(
            endpoint: "main", hostname: "main.test", port: 443, body: Array(#"{"main":1}"#.utf8), collector: probes[0].collector)
        delivery.submit([endpoint])
        try await written.waitForCount(3)

        let events = written.all
        let endpoints = events.compactMap { Self.field($0, "endpoint") }
        #expect(endpoints.contains(.string("main")), "the endpoint's report was dropped: \(endpoints)")
        #expect(endpoints.filter { $0 != .string("main") } == [.string("e0"), .string("e1")], "the probes' first two kept, in order")
        #expect(endpoints.firstIndex(of: .string("main"))! < endpoints.firstIndex(of: .string("e1"))!, "endpoint reports go first")
        let dropped = events.compactMap { event -> Int? in
            if case .int(let count) = Self.field(event, "dropped") { return count }
            return nil
        }
        #expect(dropped.reduce(0, +) == 3, "\(dropped)")
        await delivery.shutdown(grace: .zero)
    }

    @Test("Stopping with reports on a collector that never answers: each is reported lost with reason shutdown, and later ones are refused")
    func shutdownAbandons() async throws {
        let silent = try SilentServer()
        defer { silent.stop() }
        let session = try Session()
        defer { session.shutdown() }
        let written = Written()
        let delivery = PinReportDelivery(session: session) { written.append($0) }
        delivery.submit(try jobs(3, to: "http://127.0.0.1:\(silent.port)/r"))
        try await Task.sleep(for: .milliseconds(200))  // the first one is being sent
        await delivery.shutdown(grace: .milliseconds(100))

        let events = written.all
        #expect(events.map(\.name) == Array(repeating: "report.delivery_failed", count: 3))
        #expect(events.allSatisfy { Self.field($0, "reason") == .string("shutdown") }, "\(events.map(\.fields))")
        delivery.submit(try jobs(1, to: "http://127.0.0.1:\(silent.port)/r"))
        try await Task.sleep(for: .milliseconds(100))
        #expect(written.all.count == 3, "nothing is taken after the stop")
    }
}
