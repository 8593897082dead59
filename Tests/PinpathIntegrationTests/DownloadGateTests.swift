import Foundation
import PinpathTestSupport
import Testing

/// A resumed download passes the reachability gate again: `pinpath request -o … --continue` in a namespace
/// whose route to the file server (198.51.100.7, beyond the gateway) becomes a blackhole between the
/// interrupted run and the resumption.
@Suite("Downloads gated on the kernel", .serialized, .enabled(if: Capability.namespaces, Capability.reason))
struct DownloadGateTests {
    static let server = "198.51.100.7"

    @Test(
        "The resumption of an interrupted download is refused as not reachable when the route is gone: nothing sent, the partial file unchanged"
    )
    func resumptionGated() throws {
        let scratch = try TemporaryDirectory("download-gate")
        let source = scratch.file("source.bin")
        _ = try Shell.check(["dd", "if=/dev/urandom", "of=\(source)", "bs=1M", "count=8", "status=none"])
        let sha256 = String(try Shell.check(["sha256sum", source]).prefix(64))
        let network = try TestNetwork()
        defer { network.remove() }
        try network.ip(network.gateway, "addr add \(Self.server)/32 dev lo")
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
}
