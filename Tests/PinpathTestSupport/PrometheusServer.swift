import Foundation

/// A real Prometheus server (Debian's `prometheus`) on loopback scraping one target, asked through its HTTP API.
/// Its data goes to a directory of its own under `directory`; the process is killed by its PID at `stop` or deinit.
public final class PrometheusServer {
    /// Where Debian installs it; tests that need it skip without it.
    public static let executable = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    public let port: UInt16
    public let pid: pid_t

    /// Starts Prometheus scraping `target` (`HOST:PORT`) at `metrics_path: /metrics` every `interval` (a
    /// Prometheus duration, with the same timeout) as job `job`, and waits up to 20 s for it to be ready.
    public init(scraping target: String, job: String = "pinpath", interval: String = "1s", directory: String) throws {
        guard let executable = Self.executable else { throw ShellError(description: "prometheus is not installed") }
        let home = "\(directory)/prometheus-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: "\(home)/data", withIntermediateDirectories: true)
        try """
        global: { scrape_interval: \(interval), scrape_timeout: \(interval) }
        scrape_configs:
          - job_name: \(job)
            static_configs: [{ targets: ["\(target)"] }]

        """.write(toFile: "\(home)/prometheus.yml", atomically: true, encoding: .utf8)
        port = try TLSServer.freePort()
        let log = open("\(home)/prometheus.log", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(log) }
        pid = try Shell.spawn(
            [
                executable, "--config.file=\(home)/prometheus.yml", "--storage.tsdb.path=\(home)/data",
                "--web.listen-address=127.0.0.1:\(port)",
            ], stdout: log, stderr: log)
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if (try? Shell.run(["/usr/bin/curl", "-sf", "-o", "/dev/null", "http://127.0.0.1:\(port)/-/ready"]))?.status == 0 { return }
            usleep(200_000)
        }
        stop()
        throw ShellError(description: "prometheus did not become ready on 127.0.0.1:\(port) (log: \(home)/prometheus.log)")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The value of the instant query `expression` (its first sample), or nil when the result is empty.
    public func value(_ expression: String) throws -> Double? {
        let result = try Shell.run([
            "/usr/bin/curl", "-sf", "--max-time", "10", "http://127.0.0.1:\(port)/api/v1/query", "--data-urlencode", "query=\(expression)",
        ])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            let data = object["data"] as? [String: Any], let samples = data["result"] as? [[String: Any]],
            let value = samples.first?["value"] as? [Any], let text = value.last as? String
        else { return nil }
        return Double(text)
    }
}
