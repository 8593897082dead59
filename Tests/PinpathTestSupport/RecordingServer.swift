import Foundation

/// A small HTTP(S) server (Python's standard library, `/usr/bin/python3`) on 127.0.0.1 or ::1 (or an address of
/// a test network's namespace) that records
/// every request it receives, for the redirect attacks: `/redirect?status=307&to=URL` answers with that
/// redirect, anything else with `200 ok` (or, with `failing`, its first requests with an error status, as a
/// collector that is restarting or down). Killed by its PID when stopped.
///
/// A request is recorded only once its request line and headers were read, so a client that gave up in the
/// TLS handshake leaves no record: "received nothing" is an empty ``requests``.
public final class RecordingServer {
    /// One request as the server read it.
    public struct Request: Sendable {
        public let method: String
        public let path: String
        /// The fields in order, names as sent.
        public let headers: [(name: String, value: String)]
        public let body: String
        /// The TLS server name the client sent (SNI); `nil` over plain http or when it sent none.
        public let serverName: String?

        /// The first value of `name` (any case), or `nil`.
        public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    /// The address it listens on (`127.0.0.1`, `::1`).
    public let address: String
    public let port: UInt16
    public let pid: pid_t
    private let log: String
    private let isTLS: Bool

    /// `https://127.0.0.1:PORT` or `http://[::1]:PORT`, without a trailing slash.
    public var origin: String {
        "\(isTLS ? "https" : "http")://\(address.contains(":") ? "[\(address)]" : address):\(port)"
    }

    /// A URL of this server that redirects to `target` with `status`.
    public func redirect(_ status: Int, to target: String) -> String {
        let encoded = target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target
        return "\(origin)/redirect?status=\(status)&to=\(encoded)"
    }

    /// Starts it.
    /// - Parameters:
    ///   - address: `127.0.0.1` or `::1`.
    ///   - certificate: the leaf, then the chain (PEM files); `nil` serves plain http.
    ///   - directory: where its script, log and port file go.
    ///   - failing: answer the first `count` requests (recorded all the same) with `status` and an empty body;
    ///     `Int.max` for every request.
    ///   - namespace: a network namespace to run it in (`ip netns exec`), such as a test network's gateway; then
    ///     `address` is one of that namespace's.
    public init(
        address: String = "127.0.0.1", certificate: (leaf: String, key: String, chain: [String])? = nil, directory: String,
        failing: (status: Int, count: Int)? = nil, namespace: String? = nil
    ) throws {
        let name = "recording-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        let portFile = "\(directory)/\(name).port"
        log = "\(directory)/\(name).jsonl"
        if let failing {
            try "\(failing.status) \(failing.count)".write(toFile: log + ".fail", atomically: true, encoding: .utf8)
        }
        self.address = address
        isTLS = certificate != nil
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        // `ip netns exec` execs the server: the PID is still the server's.
        var arguments = (namespace.map { ["ip", "netns", "exec", $0] } ?? []) + ["/usr/bin/python3", script, address, portFile, log]
        if let certificate {
            let chainFile = "\(directory)/\(name)-chain.pem"
            try ([certificate.leaf] + certificate.chain).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
                .write(toFile: chainFile, atomically: true, encoding: .utf8)
            arguments += [chainFile, certificate.key]
        }
        (pid, port) = try Shell.spawnServer(arguments, portFile: portFile, what: "the recording server on \(address)")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The requests received so far, in order.
    public var requests: [Request] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let headers = (object["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) }
            return Request(
                method: object["method"] as? String ?? "", path: object["path"] as? String ?? "", headers: headers,
                body: object["body"] as? String ?? "", serverName: object["sni"] as? String)
        }
    }

    /// argv: address, port file, log file, [chain file, key file].
    static let script = #"""
        import json, os, socket, ssl, sys, threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit, parse_qs

        address, port_file, log_file = sys.argv[1:4]
        context = None
        if len(sys.argv) > 5:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[4], sys.argv[5])
            # The server name each client sent, kept on its connection for the record.
            def remember_server_name(connection, server_name, _context):
                connection.pinpath_sni = server_name
            context.sni_callback = remember_server_name
        lock = threading.Lock()
        # "<status> <count>": the first <count> requests get <status> (see `failing`).
        failing = open(log_file + ".fail").read().split() if os.path.exists(log_file + ".fail") else ["200", "0"]
        fail_status, fail_left = int(failing[0]), int(failing[1])

        class Handler(BaseHTTPRequestHandler):
            def handle_one(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                global fail_left
                with lock, open(log_file, "a") as log:
                    log.write(json.dumps({"method": self.command, "path": self.path,
                                          "headers": [[k, v] for k, v in self.headers.items()], "body": body,
                                          "sni": getattr(self.connection, "pinpath_sni", None)}) + "\n")
                    fails = fail_left > 0
                    if fails:
                        fail_left -= 1
                url = urlsplit(self.path)
                if fails:
                    self.send_response(fail_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif url.path == "/redirect":
                    query = parse_qs(url.query)
                    self.send_response(int(query["status"][0]))
                    self.send_header("Location", query["to"][0])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", "3")
                    self.end_headers()
                    self.wfile.write(b"ok\n")
            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_one
            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            address_family = socket.AF_INET6 if ":" in address else socket.AF_INET
            daemon_threads = True
            def get_request(self):
                connection, peer = self.socket.accept()
                if context is not None:
                    # The handshake runs in the request's thread: a client that aborts it blocks nobody.
                    connection = context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
                return connection, peer

        server = Server((address, 0), Handler)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#
}
