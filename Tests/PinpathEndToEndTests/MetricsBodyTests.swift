import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// The `/metrics` body is written in pieces as it is rendered: the pieces must join into exactly the text the
/// textfile gets, through a real HTTP client (curl), chunked, close-delimited (HTTP/1.0) and to a slow reader.
@Suite("/metrics body in pieces", .serialized)
struct MetricsBodyTests {
    /// 2,000 endpoints with every per-endpoint family: about 2 MB, some 30 pieces.
    static func store() -> MetricsStore {
        let store = MetricsStore(eventsDropped: { EventWriterThread.Statistics() })
        let endpoints = (1...2_000).map { index in
            MetricsSnapshot.Endpoint(
                name: "endpoint-\(index)", probeSucceeded: index % 7 != 0, probeDuration: 0.012345,
                phaseDurations: [("resolve", 0.0001), ("connect", 0.0002), ("tls", 0.003), ("processing", 0.0004), ("transfer", 0.00005)],
                statusCode: 200, tlsVersion: "TLSv1.3", state: index % 7 == 0 ? .down : .up,
                earliestCertificateExpiry: 1_800_000_000, lastChainExpiry: 1_790_000_000, enforcedPinFailures: index % 3,
                ocspResponseStatus: index == 1_999 ? 0 : nil)
        }
        store.update(order: endpoints.map(\.name), endpoints: endpoints, probes: 4_000)
        store.observeLateness(.milliseconds(3))
        return store
    }

    @Test(
        "The pieces join into render's text, each about pieceSize, in both formats",
        arguments: [MetricsExposition.Format.prometheus, .openMetrics])
    func piecesJoin(format: MetricsExposition.Format) {
        let snapshot = Self.store().snapshot().snapshot
        var body = MetricsExposition.Body(snapshot, format: format)
        var pieces: [[UInt8]] = []
        while let piece = body.next() { pieces.append(piece) }
        #expect(body.next() == nil)
        let text = MetricsExposition.render(snapshot, format: format)
        #expect(String(decoding: pieces.joined(), as: UTF8.self) == text)
        #expect(pieces.count > 20, "\(pieces.count) pieces of \(text.utf8.count) bytes")
        // A piece stops at the first endpoint's lines past the size: never much more.
        #expect(pieces.allSatisfy { $0.count <= MetricsExposition.Body.pieceSize + 2_048 })
        #expect(text.contains("probe_ssl_ocsp_response_status{endpoint=\"endpoint-1999\"} 0\n"))
    }

    @Test(
        "curl gets render's text: HTTP/1.1 chunked, HTTP/1.0 up to the close, a reader slower than the renderer, OpenMetrics; HEAD no body",
        arguments: [
            ([], MetricsExposition.Format.prometheus), (["--http1.0"], .prometheus), (["--limit-rate", "1M"], .prometheus),
            (["-H", "Accept: application/openmetrics-text;version=1.0.0"], .openMetrics),
        ])
    func servedBody(options: [String], format: MetricsExposition.Format) async throws {
        let directory = try TemporaryDirectory()
        let socket = directory.file("metrics.sock")
        let store = Self.store()
        let server = try await MetricsServer.start(.unix(path: socket), store: store)
        let answer = try MetricsEndpointTests.fetch(socket, "/metrics", options)
        let head = try MetricsEndpointTests.fetch(socket, "/metrics", ["-I"] + options)
        await server.close()

        let expected = MetricsExposition.render(store.snapshot().snapshot, format: format)
        let got = try #require(answer)
        #expect(got.status == 200)
        #expect(got.headers["content-type"] == format.contentType)
        #expect(got.headers["transfer-encoding"] == (options == ["--http1.0"] ? nil : "chunked"))
        #expect(got.body.utf8.count == expected.utf8.count)
        #expect(got.body == expected)
        #expect(try #require(head).status == 200 && head?.body.isEmpty == true)
    }
}
