import Foundation

/// An HTTP/1.1 server (Python's standard library, `/usr/bin/python3`) on 127.0.0.1, plain or TLS, that makes
/// response bodies of any size as it sends them (nothing stored) and misbehaves on request, for the streamed
/// bodies of issue 32. Killed by its PID when stopped.
///
/// Routes (`n`, `after`, `extra` are byte counts):
/// - `/bytes?n=N[&chunked=1]`: N bytes of a fixed pattern, with their SHA-256 in `X-Body-SHA256` (hex), by
///   `Content-Length` or chunked.
/// - `/stall?n=N&after=K`: announces N, sends K, then nothing until the client goes.
/// - `/short?n=N&after=K`: announces N, sends K, then closes the connection.
/// - `/excess?n=N&extra=E[&together=1][&length=TEXT]`: announces N and sends N+E bytes in one write (with the
///   head, too); `length` is the `Content-Length` field's text in place of N (sent raw, control bytes and all).
/// - `/bomb?coding=gzip|zstd&n=N[&chunked=1]`: N zero bytes in that content coding, whatever the request's
///   `Accept-Encoding` (a decompression bomb: 256 MiB is 261 KB of gzip, 8 KB of zstd), with
///   `Content-Encoding`, the encoded bytes' SHA-256 in `X-Body-SHA256` (hex) and the request's `Accept-Encoding`
///   in `X-Request-Accept-Encoding` (`-` when it had none). zstd needs the `zstd` program.
/// - `/transfer-coded?coding=TEXT&n=N`: N zero bytes in gzip, sent chunked with `Transfer-Encoding: TEXT, chunked`
///   (the field raw, control bytes and all), as a server applies a transfer coding: 2 GiB is 2 MB of gzip.
/// - `/redirect?status=S&to=URL`: that redirect, with a 1 KiB body.
/// - `/upload` (PUT, POST): reads the body in 64 KiB pieces, 20 ms apart, and answers `<count> <sha256 hex>`.
public final class BodyServer {
    public let port: UInt16
    public let pid: pid_t
    private let isTLS: Bool
    private let log: String

    /// `https://127.0.0.1:PORT` or `http://127.0.0.1:PORT`.
    public var origin: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(port)" }

    /// Starts it.
    /// - Parameters:
    ///   - certificate: the leaf, its key and the chain sent after it (PEM files); `nil` serves plain http.
    ///   - directory: where its script, log and port file go.
    public init(certificate: (leaf: String, key: String, chain: [String])? = nil, directory: String) throws {
        let name = "body-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        let portFile = "\(directory)/\(name).port"
        log = "\(directory)/\(name).log"
        isTLS = certificate != nil
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        var arguments = ["/usr/bin/python3", script, portFile, log]
        if let certificate {
            let chainFile = "\(directory)/\(name)-chain.pem"
            try ([certificate.leaf] + certificate.chain).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
                .write(toFile: chainFile, atomically: true, encoding: .utf8)
            arguments += [chainFile, certificate.key]
        }
        (pid, port) = try Shell.spawnServer(arguments, portFile: portFile, what: "the body server")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The request lines received so far (`GET /bytes?n=1`), in order.
    public var requests: [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").filter { !$0.hasPrefix("open ") }.map(
            String.init)
    }

    /// How many client connections the server has open now.
    public var openConnections: Int {
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        return lines.last { $0.hasPrefix("open ") }.flatMap { Int($0.dropFirst(5)) } ?? 0
    }

    /// argv: port file, log file, [chain file, key file].
    static let script = #"""
        import hashlib, os, socket, ssl, subprocess, sys, threading, time, zlib
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import urlsplit, parse_qs

        port_file, log_file = sys.argv[1:3]
        context = None
        if len(sys.argv) > 4:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[3], sys.argv[4])
        lock = threading.Lock()
        open_connections = 0
        BLOCK = bytes((i * 31 + (i >> 11)) & 0xFF for i in range(1 << 20))

        bombs = {}

        def bomb(coding, n):
            """n zero bytes in `coding`, made once per size."""
            with lock:
                if (coding, n) not in bombs:
                    zeros = bytes(min(n, 1 << 20))
                    if coding == "gzip":
                        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
                        pieces, left = [], n
                        while left > 0:
                            piece = zeros[:min(left, len(zeros))]
                            pieces.append(compressor.compress(piece))
                            left -= len(piece)
                        bombs[(coding, n)] = b"".join(pieces) + compressor.flush()
                    else:
                        zstd = subprocess.Popen(["zstd", "-19", "-q", "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                        def feed():
                            left = n
                            while left > 0:
                                piece = zeros[:min(left, len(zeros))]
                                zstd.stdin.write(piece)
                                left -= len(piece)
                            zstd.stdin.close()
                        feeder = threading.Thread(target=feed)
                        feeder.start()
                        bombs[(coding, n)] = zstd.stdout.read()
                        feeder.join()
                        zstd.wait()
                return bombs[(coding, n)]

        def record(line):
            with lock, open(log_file, "a") as log:
                log.write(line + "\n")

        def pattern(n):
            """The first n bytes of the pattern, in blocks."""
            while n > 0:
                piece = BLOCK if n >= len(BLOCK) else BLOCK[:n]
                n -= len(piece)
                yield piece

        def digest(n):
            h = hashlib.sha256()
            for piece in pattern(n):
                h.update(piece)
            return h.hexdigest()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                global open_connections
                super().setup()
                with lock:
                    open_connections += 1
                record("open %d" % open_connections)

            def finish(self):
                global open_connections
                try:
                    super().finish()
                except OSError:
                    pass
                with lock:
                    open_connections -= 1
                record("open %d" % open_connections)

            def handle_one(self):
                record("%s %s" % (self.command, self.path))
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                n = int(query.get("n", "0"))
                after = int(query.get("after", "0"))
                if url.path == "/bytes":
                    self.send_response(200)
                    self.send_header("X-Body-SHA256", digest(n))
                    if query.get("chunked") == "1":
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for piece in pattern(n):
                            self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.send_header("Content-Length", str(n))
                        self.end_headers()
                        for piece in pattern(n):
                            self.wfile.write(piece)
                elif url.path in ("/stall", "/short"):
                    self.send_response(200)
                    self.send_header("Content-Length", str(n))
                    self.end_headers()
                    for piece in pattern(after):
                        self.wfile.write(piece)
                    self.wfile.flush()
                    if url.path == "/stall":
                        # Until the client closes: a read returns nothing then.
                        self.connection.settimeout(None)
                        try:
                            while self.connection.recv(1):
                                pass
                        except OSError:
                            pass
                    self.close_connection = True
                elif url.path == "/excess":
                    extra = int(query.get("extra", "0"))
                    body = b"".join(pattern(n + extra))
                    if query.get("together") == "1":
                        # Head and body in one write, so that they arrive in one read.
                        length = query.get("length", str(n)).encode()
                        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n" + body)
                    else:
                        self.send_response(200)
                        self.send_header("Content-Length", str(n))
                        self.end_headers()
                        self.wfile.write(body)
                    self.close_connection = True
                elif url.path == "/bomb":
                    body = bomb(query["coding"], n)
                    self.send_response(200)
                    self.send_header("Content-Encoding", query["coding"])
                    self.send_header("X-Body-SHA256", hashlib.sha256(body).hexdigest())
                    self.send_header("X-Request-Accept-Encoding", self.headers.get("Accept-Encoding", "-"))
                    if query.get("chunked") == "1":
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for start in range(0, len(body), 16384):
                            piece = body[start:start + 16384]
                            self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                elif url.path == "/transfer-coded":
                    body = bomb("gzip", n)
                    coding = query["coding"].encode("utf-8", "surrogateescape")
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: " + coding + b", chunked\r\n\r\n")
                    for start in range(0, len(body), 16384):
                        piece = body[start:start + 16384]
                        self.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                elif url.path == "/redirect":
                    self.send_response(int(query["status"]))
                    self.send_header("Location", query["to"])
                    self.send_header("Content-Length", "1024")
                    self.end_headers()
                    self.wfile.write(b"r" * 1024)
                elif url.path == "/upload":
                    left = int(self.headers.get("Content-Length") or 0)
                    h = hashlib.sha256()
                    count = 0
                    while left > 0:
                        piece = self.rfile.read(min(left, 65536))
                        if not piece:
                            break
                        h.update(piece)
                        count += len(piece)
                        left -= len(piece)
                        time.sleep(0.02)
                    answer = ("%d %s" % (count, h.hexdigest())).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
            do_GET = do_POST = do_PUT = handle_one
            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            def get_request(self):
                connection, peer = self.socket.accept()
                if context is not None:
                    connection = context.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
                return connection, peer
            def handle_error(self, request, client_address):
                pass  # a client that went away mid-body is what several tests do

        server = Server(("127.0.0.1", 0), Handler)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#
}
