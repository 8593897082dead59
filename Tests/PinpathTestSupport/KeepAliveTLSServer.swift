import Foundation

/// An HTTP/1.1 server over TLS on 127.0.0.1 that keeps connections alive and records, per connection, the
/// completed handshakes and every byte received, so that a test can tell which requests shared a connection
/// and that a refused connection carried no request byte. Python's `ssl` module (python3 from Debian) in a
/// child process, one thread per connection; killed by its PID when the test ends.
public final class KeepAliveTLSServer {
    /// What one connection did, from the server's log.
    public struct Connection: Equatable, Sendable {
        /// The TLS handshake completed (the client accepted the server).
        public var handshaken = false
        /// The request lines received (`GET /a HTTP/1.1`).
        public var requests: [String] = []
        /// Application bytes received after the handshake.
        public var bytesReceived = 0
        /// The handshake failed (the client refused the server, or broke off).
        public var handshakeFailed = false
    }

    public let port: UInt16
    private let pid: pid_t
    private let logPath: String

    /// Starts the server for `certificate` and `key`, sending `chain` after the leaf.
    /// - Parameter redirectingStart: answer `/start` with `302 Found` to `/next` (same host, connection kept).
    public init(certificate: String, key: String, chain: [String], in directory: String, redirectingStart: Bool = false) throws {
        let certificateFile = "\(directory)/keepalive-chain-\(UUID().uuidString).pem"
        try ([certificate] + chain).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: certificateFile, atomically: true, encoding: .utf8)
        let scriptPath = "\(directory)/keepalive-server-\(UUID().uuidString).py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        logPath = "\(directory)/keepalive-log-\(UUID().uuidString)"
        let (listener, port) = try TLSServer.bindLoopback()
        self.port = port
        close(listener)
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"
        pid = try Shell.spawn(
            ["/usr/bin/env", python, scriptPath, String(port), certificateFile, key, logPath, redirectingStart ? "redirect" : "plain"],
            stdout: devNull, stderr: devNull)
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if (try? String(contentsOfFile: logPath, encoding: .utf8))?.hasPrefix("listening") == true { return }
            usleep(20_000)
        }
        stop()
        throw ShellError(description: "the keep-alive TLS server did not listen on 127.0.0.1:\(port)")
    }

    /// Every connection accepted so far, in order.
    public var connections: [Connection] {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        var connections: [Int: Connection] = [:]
        for line in log.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2).map(String.init)
            guard fields.count >= 2, let number = Int(fields[1]) else { continue }
            var connection = connections[number] ?? Connection()
            switch fields[0] {
            case "handshake": connection.handshaken = true
            case "request": connection.requests.append(fields.count > 2 ? fields[2] : "")
            case "bytes": connection.bytesReceived += Int(fields.count > 2 ? fields[2] : "0") ?? 0
            case "failed": connection.handshakeFailed = true
            default: break
            }
            connections[number] = connection
        }
        return connections.keys.sorted().map { connections[$0]! }
    }

    public func stop() {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == 0 else { return }
        Shell.kill(pid)
    }

    deinit { stop() }

    /// Logs `accept N`, `handshake N` or `failed N REASON`, `bytes N COUNT` and `request N LINE` lines, each
    /// written whole.
    static let script = #"""
        import socket, ssl, sys, threading
        port, certificate, key, log_path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
        redirecting = sys.argv[5] == "redirect"
        log_lock = threading.Lock()
        log_file = open(log_path, "w")
        def log(line):
            with log_lock:
                log_file.write(line + "\n")
                log_file.flush()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        log("listening")
        def serve(raw, number):
            try:
                connection = context.wrap_socket(raw, server_side=True)
            except (ssl.SSLError, OSError) as error:
                log("failed %d %s" % (number, error))
                raw.close()
                return
            log("handshake %d" % number)
            pending = b""
            try:
                while True:
                    data = connection.recv(65536)
                    if not data:
                        break
                    log("bytes %d %d" % (number, len(data)))
                    pending += data
                    while b"\r\n\r\n" in pending:
                        head, pending = pending.split(b"\r\n\r\n", 1)
                        line = head.split(b"\r\n")[0]
                        log("request %d %s" % (number, line.decode("latin-1")))
                        if redirecting and line.split(b" ")[1:2] == [b"/start"]:
                            connection.sendall(b"HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n")
                        else:
                            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
            except (ssl.SSLError, OSError) as error:
                log("ended %d %s" % (number, error))
            finally:
                connection.close()
        number = 0
        while True:
            raw, _ = listener.accept()
            number += 1
            log("accept %d" % number)
            threading.Thread(target=serve, args=(raw, number), daemon=True).start()
        """#
}
