import Foundation

/// nginx on 127.0.0.1 serving a directory over https, as a real file server answers downloads: a strong
/// `ETag` and `Last-Modified`, `Range` and `If-Range` handled natively. Each request is logged (its `Range`
/// and `If-Range` fields, the status and the bytes sent) for the test to read; `limit_rate` slows the
/// responses so that a test can interrupt a transfer half way. One process (`master_process off`), killed by
/// its PID when stopped.
public final class NginxFileServer {
    /// One logged request.
    public struct Request: Sendable, Equatable {
        public let path: String
        public let status: Int
        /// The `Range` field, `nil` when none was sent.
        public let range: String?
        /// The `If-Range` field, `nil` when none was sent.
        public let ifRange: String?
    }

    public let port: UInt16
    public let pid: pid_t
    private let accessLog: String

    /// `https://127.0.0.1:PORT`.
    public var origin: String { "https://127.0.0.1:\(port)" }

    /// Starts nginx.
    /// - Parameters:
    ///   - root: the directory served.
    ///   - certificate: the leaf, its key and the chain sent after it (PEM files).
    ///   - rate: `limit_rate` (bytes per second), or `nil` for full speed.
    ///   - rangesAtFullSpeed: the rate applies only to requests without `Range`: a resumption is not slowed.
    ///   - http2: offers HTTP/2 (ALPN `h2`) besides HTTP/1.1.
    ///   - directory: where its configuration, logs and pid file go.
    public init(
        root: String, certificate: (leaf: String, key: String, chain: [String]), rate: Int? = nil, rangesAtFullSpeed: Bool = false,
        http2: Bool = false, directory: String
    ) throws {
        let nginx = try Shell.path(of: "nginx")
        let name = "nginx-\(UUID().uuidString)"
        let chainFile = "\(directory)/\(name)-chain.pem"
        try ([certificate.leaf] + certificate.chain).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: chainFile, atomically: true, encoding: .utf8)
        accessLog = "\(directory)/\(name)-access.log"
        port = try TLSServer.freePort()
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(directory)/\(name).pid;
            error_log \(directory)/\(name)-error.log;
            events { worker_connections 64; }
            http {
                log_format ranges escape=none '$uri\\t$status\\t$http_range\\t$http_if_range';
                access_log \(accessLog) ranges;
                map $http_range $pinpath_rate { "" \(rate ?? 0); default \(rangesAtFullSpeed ? 0 : rate ?? 0); }
                client_body_temp_path \(directory)/\(name)-body;
                proxy_temp_path \(directory)/\(name)-proxy;
                fastcgi_temp_path \(directory)/\(name)-fastcgi;
                uwsgi_temp_path \(directory)/\(name)-uwsgi;
                scgi_temp_path \(directory)/\(name)-scgi;
                server {
                    listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                    ssl_certificate \(chainFile);
                    ssl_certificate_key \(certificate.key);
                    root \(root);
                    limit_rate $pinpath_rate;
                }
            }
            """
        let configurationFile = "\(directory)/\(name).conf"
        try configuration.write(toFile: configurationFile, atomically: true, encoding: .utf8)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        pid = try Shell.spawn([nginx, "-c", configurationFile, "-e", "\(directory)/\(name)-error.log"], stdout: devNull, stderr: devNull)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let socket = try? TLSServer.connectLoopback(port: port) {
                close(socket)
                return
            }
            usleep(20_000)
        }
        Shell.stopIfRunning(pid)
        let errors = (try? String(contentsOfFile: "\(directory)/\(name)-error.log", encoding: .utf8)) ?? ""
        throw ShellError(description: "nginx did not listen on 127.0.0.1:\(port): \(errors)")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The requests logged so far (nginx writes a line when a response ends, or its connection does).
    public var requests: [Request] {
        let text = (try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            let value = { (index: Int) -> String? in fields.count > index && fields[index] != "-" ? fields[index] : nil }
            return Request(path: fields[0], status: Int(fields.count > 1 ? fields[1] : "") ?? 0, range: value(2), ifRange: value(3))
        }
    }
}
