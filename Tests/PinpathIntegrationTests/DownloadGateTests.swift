import Foundation
import PinpathTestSupport
import Testing

/// Every transfer of a download passes the reachability gate again: `pinpath request -o …` in a namespace
/// whose route to the file server (198.51.100.7, beyond the gateway) becomes a blackhole, between an
/// interrupted run and its `--continue` resumption, or during a transfer before its reconnection.
@Suite("Downloads gated on the kernel", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct DownloadGateTests {
    static let server = "198.51.100.7"

    /// 8 MiB of random bytes to serve, in a scratch directory, and their SHA-256.
    static func sourceFile() throws -> (scratch: TemporaryDirectory, source: String, sha256: String) {
        let scratch = try TemporaryDirectory("download-gate")
        let source = scratch.file("source.bin")
        _ = try Shell.check(["dd", "if=/dev/urandom", "of=\(source)", "bs=1M", "count=8", "status=none"])
        return (scratch, source, String(try Shell.check(["sha256sum", source]).prefix(64)))
    }

    /// A host and a gateway namespace, the gateway holding the file server's address beyond it.
    static func network() throws -> TestNetwork {
        let network = try TestNetwork()
        do {
            try network.ip(network.gateway, "addr add \(server)/32 dev lo")
        } catch {
            network.remove()
            throw error
        }
        return network
    }

    @Test(
        "The resumption of an interrupted download is refused as not reachable when the route is gone: nothing sent, the partial file unchanged"
    )
    func resumptionGated() throws {
        let (scratch, source, sha256) = try Self.sourceFile()
        let network = try Self.network()
        defer { network.remove() }
        // The first run's transfer and its 3 reconnections are dropped after 1 MiB each.
        let server = try RangeFileServer(
            serving: source, certificate: nil, misbehaviours: [.dropAfter(bytes: 1 << 20, responses: 4)], address: Self.server,
            namespace: network.gateway, directory: scratch.path)
        defer { server.stop() }
        let destination = scratch.file("file.bin")
        let partialPath = scratch.file(".file.bin.pinpath-partial")
        func download(_ extra: [String]) throws -> Shell.Result {
            try Shell.run(
                ["ip", "netns", "exec", network.host, Shell.pinpath, "request", "\(server.origin)/file.bin", "-o", destination] + extra)
        }

        let interrupted = try download([])
        #expect(interrupted.status == 3, "\(interrupted.stderr)")
        let partial = try #require(FileManager.default.contents(atPath: partialPath))
        #expect(partial.count == 4 << 20 && server.connections == 4)

        try network.ip(network.host, "route add blackhole \(Self.server)/32")
        let refused = try download(["--continue"])
        #expect(refused.status == 4, "\(refused.stderr)")
        #expect(refused.stderr.contains("unreachable") && refused.stderr.contains("blackhole"), "\(refused.stderr)")
        #expect(server.connections == 4 && server.requests.count == 4, "nothing sent for the resumption")
        #expect(FileManager.default.contents(atPath: partialPath) == partial)
        #expect(!FileManager.default.fileExists(atPath: destination))

        try network.ip(network.host, "route del blackhole \(Self.server)/32")
        let resumed = try download(["--continue", "--sha256", sha256])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(server.requests.last?.header("Range") == "bytes=\(4 << 20)-")
        #expect(try Shell.check(["sha256sum", destination]).hasPrefix(sha256))
    }

    @Test(
        "A reconnection after a drop inside one run is refused as not reachable when the route went during the transfer: nothing sent, the partial file kept; --continue completes it"
    )
    func reconnectionGated() async throws {
        let (scratch, source, sha256) = try Self.sourceFile()
        let network = try Self.network()
        defer { network.remove() }
        // Reverse-path filtering (a host's sysctl that new namespaces inherit) would let the blackhole swallow
        // the server's FIN too: the drop would then come only as the 30 s stall. The route alone is tested here.
        try Shell.check(
            ["ip", "netns", "exec", network.host, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.pa0.rp_filter=0"])
        // The first response sends 1 MiB, then holds its connection until released, then drops it.
        let server = try RangeFileServer(
            serving: source, certificate: nil, misbehaviours: [.dropAfter(bytes: 1 << 20), .dropWhenReleased], address: Self.server,
            namespace: network.gateway, directory: scratch.path)
        defer { server.stop() }
        let destination = scratch.file("file.bin")
        let partialPath = scratch.file(".file.bin.pinpath-partial")
        let errorPath = scratch.file("stderr.txt")
        let errors = open(errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(errors) }
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let pid = try Shell.spawn(
            ["ip", "netns", "exec", network.host, Shell.pinpath, "request", "\(server.origin)/file.bin", "-o", destination],
            stdout: devNull, stderr: errors)
        defer { Shell.stopIfRunning(pid) }
        func partialSize() -> Int { ((try? FileManager.default.attributesOfItem(atPath: partialPath))?[.size] as? Int) ?? 0 }

        // The first transfer is under way and has written its 1 MiB; the server holds the connection open.
        let deadline = ContinuousClock.now + .seconds(30)
        while partialSize() < 1 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try #require(partialSize() == 1 << 20 && server.requests.count == 1, "the first transfer did not write its 1 MiB in 30 s")
        try network.ip(network.host, "route add blackhole \(Self.server)/32")
        try server.releaseDrops()
        // Signal 0 sends nothing: this waits for pinpath's own exit (killed only past the bound).
        let status = try await Shell.stop(pid, signal: 0, timeout: .seconds(60))
        let stderr = try String(contentsOfFile: errorPath, encoding: .utf8)
        #expect(status == 4, "\(stderr)")
        #expect(stderr.contains("unreachable") && stderr.contains("blackhole"), "\(stderr)")
        #expect(server.connections == 1 && server.requests.count == 1, "nothing sent for the reconnection")
        let partial = try #require(FileManager.default.contents(atPath: partialPath))
        let sourceBytes = try #require(FileManager.default.contents(atPath: source))
        #expect(partial == sourceBytes.prefix(1 << 20), "the partial file holds the first transfer's 1 MiB")
        #expect(!FileManager.default.fileExists(atPath: destination))

        try network.ip(network.host, "route del blackhole \(Self.server)/32")
        let resumed = try Shell.run(
            [
                "ip", "netns", "exec", network.host, Shell.pinpath, "request", "\(server.origin)/file.bin", "-o", destination, "--continue",
                "--sha256", sha256,
            ])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(server.requests.count == 2 && server.requests.last?.header("Range") == "bytes=\(1 << 20)-")
        #expect(try Shell.check(["sha256sum", destination]).hasPrefix(sha256))
    }
}
