// AsyncHTTPClient and URLSession driven as `pinpath-bench get` drives pinpath's Session, for
// benchmarks/request-core.sh: prints one line in pinpath-bench's format, asserts nothing.
//
//   SwiftPeers ahc|urlsession URL COUNT CONCURRENCY [fresh] [ca=FILE]
//
// COUNT GET requests, CONCURRENCY tasks on the global pool each sending its share one after another, after one
// warm-up request (trust store, first connection). Each client gets as many connections to the host as there
// are tasks (both default to fewer: 8 and 6), as libcurl's floor and pinpath open one per transfer.
// fresh: every request on a new connection (`Connection: close`; nginx keeps no session cache and sends no
// tickets, so each one is a full handshake).
// ca=FILE: AsyncHTTPClient trusts that root (TLSConfiguration.trustRoots). URLSession on Linux has no way to
// add a root (no server-trust challenge without Security, and FoundationNetworking reads
// URLSessionCertificateAuthorityInfoFile only on Android): it trusts libcurl's default CA file, the system
// store, and request-core.sh runs it in a mount namespace where that file is replaced.
// A request that fails is sent again and counted (`failed_attempts=`, at most 10 per task, then it gives up):
// URLSession on Linux now and then never completes a request on a fresh connection (seen here once in 1,500),
// so its requests time out after 5 s, and a run that met one says so rather than dying.
import AsyncHTTPClient
import Foundation
import FoundationNetworking
import Glibc
import NIOCore
import NIOPosix
import NIOSSL

/// One way of sending a GET: each peer's client, configured once.
protocol PeerClient: Sendable {
    /// Sends one GET and reads its body; returns the status.
    func get() async throws -> Int
    func shutdown() async throws
}

struct AsyncHTTPClientPeer: PeerClient {
    let client: HTTPClient
    let request: HTTPClientRequest

    init(url: String, connections: Int, fresh: Bool, caFile: String?) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .file(caFile) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        configuration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        var request = HTTPClientRequest(url: url)
        if fresh { request.headers.add(name: "Connection", value: "close") }
        self.request = request
    }

    func get() async throws -> Int {
        let response = try await client.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    func shutdown() async throws { try await client.shutdown() }
}

struct URLSessionPeer: PeerClient {
    let session: URLSession
    let request: URLRequest

    init(url: String, connections: Int, fresh: Bool) {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = connections
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = 5
        session = URLSession(configuration: configuration)
        var request = URLRequest(url: URL(string: url)!)
        if fresh { request.setValue("close", forHTTPHeaderField: "Connection") }
        self.request = request
    }

    func get() async throws -> Int {
        let (_, response) = try await session.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    func shutdown() async throws { session.invalidateAndCancel() }
}

let arguments = CommandLine.arguments
guard arguments.count >= 5, let count = Int(arguments[3]), let concurrency = Int(arguments[4]), count > 0, concurrency > 0
else {
    FileHandle.standardError.write(Data("usage: SwiftPeers ahc|urlsession URL COUNT CONCURRENCY [fresh] [ca=FILE]\n".utf8))
    exit(64)
}
let url = arguments[2]
let flags = arguments.dropFirst(5)
let fresh = flags.contains("fresh")
let caFile = flags.first { $0.hasPrefix("ca=") }.map { String($0.dropFirst(3)) }
let client: any PeerClient
switch arguments[1] {
case "ahc": client = AsyncHTTPClientPeer(url: url, connections: concurrency, fresh: fresh, caFile: caFile)
case "urlsession": client = URLSessionPeer(url: url, connections: concurrency, fresh: fresh)
default:
    FileHandle.standardError.write(Data("SwiftPeers: unknown client '\(arguments[1])' (ahc or urlsession)\n".utf8))
    exit(64)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// VmRSS of this process in MiB (0 when /proc cannot be read).
func rssMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return 0 }
    return Double(line.split(separator: " ")[1]).map { $0 / 1024 } ?? 0
}

func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }

let warmUp = try await client.get()
guard warmUp == 200 else {
    FileHandle.standardError.write(Data("SwiftPeers: the warm-up request got status \(warmUp)\n".utf8))
    exit(1)
}
let cpuBefore = cpuSeconds()
let started = ContinuousClock.now
let failedAttempts = try await withThrowingTaskGroup(of: Int.self) { group in
    for worker in 0..<concurrency {
        group.addTask {
            var failed = 0
            for _ in stride(from: worker, to: count, by: concurrency) {
                while true {
                    do {
                        let status = try await client.get()
                        precondition(status == 200, "status \(status)")
                        break
                    } catch {
                        failed += 1
                        FileHandle.standardError.write(Data("SwiftPeers: a request failed (sent again): \(error)\n".utf8))
                        if failed > 10 { throw error }
                    }
                }
            }
            return failed
        }
    }
    var total = 0
    for try await failed in group { total += failed }
    return total
}
let elapsed = ContinuousClock.now - started
let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
let cpu = cpuSeconds() - cpuBefore
print(
    """
    requests=\(count) wall_s=\(format(wall)) rps=\(format(Double(count) / wall)) \
    cpu_us_per_request=\(format(cpu / Double(count) * 1e6)) rss_mib=\(format(rssMiB())) failed_attempts=\(failedAttempts)
    """
)
try await client.shutdown()
