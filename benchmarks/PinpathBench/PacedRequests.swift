import PinpathHTTP
import PinpathReachability

/// `pinpath-bench paced`: the request core's own full-handshake request at an agent's pace, for
/// benchmarks/agent-scale.sh. Requests start evenly spread at `rate` a second, each as its own task (as the
/// agent starts its probes), so the figure is paced like the agent's and like the libcurl floor's: back to
/// back, warm caches make the same request cheaper.
enum PacedRequests {
    /// Sends `count` requests at `rate` a second; returns the line of figures. With a monitor, the URL's host
    /// is watched first, as the agent watches its endpoints' hosts, so the gate answers from the snapshot.
    static func run(
        session: Session, monitor: ReachabilityMonitor?, request: SessionRequest, options: RequestOptions, count: Int, rate: Double
    ) async throws -> String {
        if let monitor, let host = request.url.host() {
            try await monitor.addTarget(IPAddress(host).map(ReachabilityTarget.address) ?? .host(host))
        }
        _ = try await session.send(request, options: options)  // warm-up: trust store, first handshake
        let cpuBefore = PinpathBench.cpuSeconds()
        let started = ContinuousClock.now
        let spacing = Duration.nanoseconds(Int64(1e9 / rate))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                try await Task.sleep(until: started + spacing * index, tolerance: .milliseconds(1))
                group.addTask {
                    let response = try await session.send(request, options: options)
                    precondition(response.statusCode == 200, "status \(response.statusCode)")
                }
            }
            try await group.waitForAll()
        }
        let wall = (ContinuousClock.now - started).seconds
        let cpu = PinpathBench.cpuSeconds() - cpuBefore
        return """
            requests=\(count) wall_s=\(PinpathBench.format(wall)) rps=\(PinpathBench.format(Double(count) / wall)) \
            cpu_us_per_request=\(PinpathBench.format(cpu / Double(count) * 1e6)) rss_mib=\(PinpathBench.format(PinpathBench.rssMiB()))
            """
    }
}
