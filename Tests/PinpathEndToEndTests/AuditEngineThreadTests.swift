import Foundation
import PinpathTestSupport
import Testing

/// `pinpath audit` runs its connections on a session's handshake engine (issue 30: "`audit` uses it too"): an audit
/// of 200 hosts starts no more threads than an audit of one, where each audit used to hold a thread of the blocking
/// pool in `poll` for its whole handshake (8 of them for a batch). Real servers: `openssl s_server`, a closed port,
/// and one that never answers the ClientHello.
@Suite("pinpath audit on the handshake engine", .serialized, .enabled(if: straceProgram != nil, "strace is not installed"))
struct AuditEngineThreadTests {
    let pki = TestPKI.shared

    @Test("pinpath audit of 200 hosts (servers, closed ports, a silent one) starts no more threads than of 1; results in order")
    func threadsDoNotGrowWithHosts() throws {
        let directory = try TemporaryDirectory()
        // Several servers: s_server handles one connection at a time.
        let servers = try (0..<4).map { _ in
            try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        }
        defer { for server in servers { server.stop() } }
        let refused = try HostileServer(.refuse)
        defer { refused.stop() }
        let silent = try HostileServer(.silent)
        defer { silent.stop() }
        func port(_ index: Int) -> UInt16 { index % 50 == 7 ? refused.port : index == 100 ? silent.port : servers[index % 4].port }
        func audit(_ count: Int) throws -> (threads: Int, results: [String], exit: Int32) {
            let hosts = (0..<count).map { "127.0.0.1:\(port($0))" }
            let (result, threads) = try threadStarts(
                running: [Shell.pinpath, "audit", "--json", "--ca-file", pki.path("store"), "--timeout", "2s"] + hosts,
                trace: directory.file("trace-\(count)"))
            let report = try InterceptionExpiryTests.json(result.stdout)
            // One host's audit is the object itself; several are an array.
            let audits = count == 1 ? [report] : report["audits"] as? [[String: Any]] ?? []
            #expect(audits.map { "127.0.0.1:\($0["port"] as? Int ?? 0)" } == hosts, "the results are not in the order given")
            return (threads, audits.map { $0["result"] as? String ?? "?" }, result.status)
        }
        let one = try audit(1)
        let many = try audit(200)
        #expect(one.results == ["trusted"] && one.exit == 0)
        let expected = (0..<200).map { port($0) == servers[$0 % 4].port ? "trusted" : "no_handshake" }
        #expect(many.results == expected && many.exit == 3)
        #expect(one.threads > 0, "strace saw no thread start at all: it did not trace pinpath")
        // A margin of 4 for Swift's concurrency pool, which may start a worker more under load; a thread of the
        // pool per audit in flight would be 7 more.
        #expect(many.threads <= one.threads + 4, "an audit of 1 host started \(one.threads) threads, of 200 \(many.threads)")
    }
}
