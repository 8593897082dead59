import PinpathHTTP

/// `pinpath-bench stream`: one GET through `Session.stream`, its body's chunks counted and dropped, for
/// benchmarks/large-transfer.sh next to libcurl's write-callback loop (benchmarks/curl-write-loop.c), which prints
/// the same figures. Timed from the request to the body's end; the session and its trust store are made before.
/// With `onSessionThread`, the loop runs on the session's libcurl thread (`Session.executor`), so a chunk reaches it
/// without waking another thread; otherwise on the global pool, as most callers iterate.
enum StreamedBody {
    /// Streams `request`'s body to its end; returns the line of figures (MB are 10^6 bytes, as the C loop's).
    static func run(session: Session, request: SessionRequest, options: RequestOptions, onSessionThread: Bool) async throws -> String {
        if onSessionThread {
            return try await withTaskExecutorPreference(session.executor) { try await measure(session, request, options) }
        }
        return try await measure(session, request, options)
    }

    private static func measure(_ session: Session, _ request: SessionRequest, _ options: RequestOptions) async throws -> String {
        let cpuBefore = PinpathBench.cpuSeconds()
        let started = ContinuousClock.now
        let response = try await session.stream(request, options: options)
        precondition(response.head.statusCode == 200, "status \(response.head.statusCode)")
        var received = 0
        var chunks = 0
        for try await chunk in response.body {
            received += chunk.count
            chunks += 1
        }
        let wall = (ContinuousClock.now - started).seconds
        let cpu = PinpathBench.cpuSeconds() - cpuBefore
        let format = PinpathBench.format
        return """
            bytes=\(received) wall_s=\(format(wall)) mbps=\(format(Double(received) / wall / 1e6)) \
            cpu_s=\(format(cpu)) cpu_s_per_gib=\(format(cpu / (Double(received) / 1_073_741_824))) \
            chunks=\(chunks) mean_chunk_kib=\(format(Double(received) / Double(max(chunks, 1)) / 1024)) \
            version=\(response.head.httpVersion) peak_rss_mib=\(format(PinpathBench.peakRSSMiB()))
            """
    }
}
