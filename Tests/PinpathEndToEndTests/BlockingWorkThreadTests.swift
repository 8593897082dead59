import Foundation
import PinpathSupport
import PinpathTestSupport
import Testing

/// The handshakes pinpath makes outside libcurl (an audit, a key-possession check after an expiry) run on one
/// bounded pool (`BlockingPool`): 100 of them start at most the pool's threads more than one does. Before issue 29
/// each had a `DispatchQueue` of its own, and 100 expired endpoints' checks started 64 threads more than one.
@Suite("Blocking work starts a bounded number of threads", .serialized, .enabled(if: straceProgram != nil, "strace is not installed"))
struct BlockingWorkThreadTests {
    /// The pool's threads, and 4 for Swift's concurrency pool, which may start a worker more under load.
    static let margin = BlockingPool.sharedThreads + 4

    static func file(_ name: String) -> String { InterceptionExpiryTests.file(name) }

    @Test("pinpath run --once: 100 expired endpoints, each proven by a second handshake, start at most the pool's threads more than 1 does")
    func keyPossessionChecks() throws {
        let directory = try TemporaryDirectory()
        // The operator's expired leaf, served with its key: each check proves it (tls_expired).
        let server = try TLSServer(certificate: Self.file("legit.pem"), key: Self.file("legit.key"), chain: [], in: directory.path)
        defer { server.stop() }
        func run(_ count: Int) throws -> (threads: Int, expired: Int) {
            let endpoints = (0..<count).map {
                "  - { name: e\($0), url: \"https://127.0.0.1:\(server.port)/\", policy: operator, timeout: 10s }"
            }
            let configuration = directory.file("expired-\(count).yaml")
            try """
            policies:
              operator: { mode: none, ca_file: \(Self.file("root.pem")) }
            endpoints:
            \(endpoints.joined(separator: "\n"))

            """.write(toFile: configuration, atomically: true, encoding: .utf8)
            let (result, threads) = try threadStarts(
                running: [Shell.pinpath, "run", "--once", "--config", configuration], trace: directory.file("trace-\(count)"))
            let expired = result.stdout.split(separator: "\n").filter {
                $0.contains("\"event\":\"probe.completed\"") && $0.contains("\"error_category\":\"tls_expired\"")
            }
            return (threads, expired.count)
        }
        let one = try run(1)
        let many = try run(100)
        #expect(one.expired == 1 && many.expired == 100, "tls_expired probes: \(one.expired) of 1, \(many.expired) of 100")
        #expect(one.threads > 0, "strace saw no thread start at all: it did not trace the agent")
        #expect(
            many.threads <= one.threads + Self.margin,
            "1 expired endpoint started \(one.threads) threads, 100 started \(many.threads)")
    }

    @Test("pinpath audit of 100 hosts starts at most the pool's threads more than of 1, and each gets its handshake")
    func audits() throws {
        let directory = try TemporaryDirectory()
        let server = try TLSServer(certificate: Self.file("legit.pem"), key: Self.file("legit.key"), chain: [], in: directory.path)
        defer { server.stop() }
        func audit(_ count: Int) throws -> (threads: Int, handshakes: Int) {
            let hosts = Array(repeating: "127.0.0.1:\(server.port)", count: count)
            let (result, threads) = try threadStarts(
                running: [Shell.pinpath, "audit", "--json", "--ca-file", Self.file("root.pem"), "--timeout", "10s"] + hosts,
                trace: directory.file("trace-\(count)"))
            // The lapsed leaf: every audit that got its handshake says chain_invalid.
            let report = try InterceptionExpiryTests.json(result.stdout)
            // One host's audit is the object itself; several are an array.
            let audits = count == 1 ? [report] : report["audits"] as? [[String: Any]] ?? []
            return (threads, audits.filter { $0["result"] as? String == "chain_invalid" }.count)
        }
        let one = try audit(1)
        let many = try audit(100)
        #expect(one.handshakes == 1 && many.handshakes == 100, "handshakes: \(one.handshakes) of 1, \(many.handshakes) of 100")
        #expect(one.threads > 0, "strace saw no thread start at all: it did not trace pinpath")
        #expect(many.threads <= one.threads + Self.margin, "an audit of 1 host started \(one.threads) threads, of 100 \(many.threads)")
    }
}
