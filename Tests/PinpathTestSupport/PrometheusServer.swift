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
    public convenience init(scraping target: String, job: String = "pinpath", interval: String = "1s", directory: String) throws {
        try self.init(jobs: [Job(name: job, target: target)], interval: interval, directory: directory)
    }

    /// One scrape job: its target (`HOST:PORT`) and more of its settings as YAML flow mappings, one per key
    /// (`scheme: https`, `basic_auth: { username: u, password: p }`, `tls_config: { ca_file: … }`).
    public struct Job {
        public var name: String
        public var target: String
        public var settings: [String]

        public init(name: String, target: String, settings: [String] = []) {
            self.name = name
            self.target = target
            self.settings = settings
        }
    }

    /// Starts Prometheus scraping each of `jobs` every `interval`, and waits up to 20 s for it to be ready.
    public init(jobs: [Job], interval: String = "1s", directory: String) throws {
        guard let executable = Self.executable else { throw ShellError(description: "prometheus is not installed") }
        let home = "\(directory)/prometheus-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: "\(home)/data", withIntermediateDirectories: true)
        var configuration = "global: { scrape_interval: \(interval), scrape_timeout: \(interval) }\nscrape_configs:\n"
        for job in jobs {
            configuration += "  - job_name: \(job.name)\n    static_configs: [{ targets: [\"\(job.target)\"] }]\n"
            for setting in job.settings { configuration += "    \(setting)\n" }
        }
        try configuration.write(toFile: "\(home)/prometheus.yml", atomically: true, encoding: .utf8)
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
