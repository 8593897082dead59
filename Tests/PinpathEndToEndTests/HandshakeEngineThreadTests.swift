import Foundation
import PinpathTestSupport
import Testing

/// `tls://` probes run on the session's handshake engine: `pinpath run --once` with 200 of them starts the same
/// few threads as with one, and every probe's handshake is verified (issue 30: no thread per probe).
@Suite("tls:// probes start no threads", .enabled(if: straceProgram != nil, "strace is not installed"))
struct HandshakeEngineThreadTests {
    let pki = TestPKI.shared

    /// Threads `pinpath run --once` starts for `count` tls:// probes pinned to the test PKI's intermediate, counted
    /// by strace; and how many probes succeeded.
    func threadsStarted(probes count: Int, servers: [TLSServer], in directory: TemporaryDirectory) throws -> (threads: Int, succeeded: Int)
    {
        let pins = try pki.chain(["inter", "root"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        let endpoints = (0..<count).map { index in
            "  - { name: t\(index), url: \"tls://127.0.0.1:\(servers[index % servers.count].port)\", policy: pinned, timeout: 30s }"
        }
        let configuration = directory.file("tls-\(count).yaml")
        try ("policies:\n  pinned: { mode: public_key, pins: [\(pins)] }\nendpoints:\n" + endpoints.joined(separator: "\n") + "\n")
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        let (result, threads) = try threadStarts(
            running: ["/usr/bin/env", "SSL_CERT_FILE=\(pki.path("store"))", Shell.pinpath, "run", "--once", "--config", configuration],
            trace: directory.file("trace-\(count)"))
        #expect(result.status == 0, "\(result.stderr)")
        let succeeded = result.stdout.split(separator: "\n").filter {
            $0.contains("\"event\":\"probe.completed\"") && $0.contains("\"outcome\":\"success\"")
        }
        return (threads, succeeded.count)
    }

    @Test("200 tls:// probes start no more threads than one does, and each handshake is verified")
    func threadsDoNotGrowWithProbes() throws {
        let directory = try TemporaryDirectory()
        // Several servers: s_server handles one connection at a time.
        let servers = try (0..<4).map { _ in
            try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: pki.directory)
        }
        defer { for server in servers { server.stop() } }
        let one = try threadsStarted(probes: 1, servers: servers, in: directory)
        let many = try threadsStarted(probes: 200, servers: servers, in: directory)
        #expect(one.succeeded == 1 && many.succeeded == 200, "\(one.succeeded) and \(many.succeeded) succeeded")
        #expect(one.threads > 0, "strace saw no thread start at all: it did not trace the agent")
        // A margin of 4 for Swift's concurrency pool, which may start a worker more under load; a thread per
        // probe would be 200 more.
        #expect(many.threads <= one.threads + 4, "1 tls probe started \(one.threads) threads, 200 started \(many.threads)")
    }
}
