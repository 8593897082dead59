import Foundation

/// A small HTTP proxy (Python's standard library, `/usr/bin/python3`) for the proxy tests: CONNECT tunnels to
/// any host and port, and plain http requests forwarded one at a time. It records every request it reads
/// (``requests``): `CONNECT host:port`, `GET http://…`, and `MITM` for a request it read inside a tunnel it
/// answered itself. Killed by its PID when stopped.
///
/// Its modes: ``Mode/https`` listens with TLS (an https proxy); ``Mode/impersonating`` answers CONNECT itself
/// and serves TLS with its own certificate, as an intercepting proxy would; `credentials` requires them
/// (`Proxy-Authorization: Basic`, else 407).
public final class ProxyServer {
    /// One request the proxy read.
    public struct Request: Sendable, Equatable {
        /// `CONNECT`, `GET`…, `MITM` (read inside a tunnel it answered itself), or `ERROR` (what went wrong).
        public let method: String
        /// `host:port` for CONNECT, the absolute URL for forwarded requests.
        public let target: String
        /// A `Proxy-Authorization` field came with it.
        public let authorized: Bool

        public init(method: String, target: String, authorized: Bool) {
            self.method = method
            self.target = target
            self.authorized = authorized
        }
    }

    /// How it serves.
    public enum Mode {
        /// Plain http to the proxy.
        case http
        /// TLS to the proxy, with this certificate (leaf, key, chain PEM files).
        case https(leaf: String, key: String, chain: [String])
        /// Plain http to the proxy, but CONNECT is answered by the proxy itself, with TLS under this certificate.
        case impersonating(leaf: String, key: String, chain: [String])
    }

    public let address: String
    public let port: UInt16
    public let pid: pid_t
    private let log: String
    private let isTLS: Bool

    /// `http://127.0.0.1:PORT` or `https://…`, with `credentials` (user:password) when given.
    public func url(credentials: String? = nil) -> String {
        "\(isTLS ? "https" : "http")://\(credentials.map { "\($0)@" } ?? "")\(address.contains(":") ? "[\(address)]" : address):\(port)"
    }

    /// Starts it on `address` (port chosen by the kernel).
    /// - Parameters:
    ///   - namespace: a network namespace to run it in (`ip netns exec`), where `address` is.
    ///   - credentials: `user:password` it requires.
    ///   - directory: where its script, log and port file go.
    public init(
        address: String = "127.0.0.1", mode: Mode = .http, credentials: String? = nil, namespace: String? = nil, directory: String
    ) throws {
        let name = "proxy-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        let portFile = "\(directory)/\(name).port"
        log = "\(directory)/\(name).jsonl"
        self.address = address
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        var arguments = (namespace.map { ["ip", "netns", "exec", $0] } ?? []) + ["/usr/bin/python3", script, address, portFile, log]
        func certificate(_ kind: String, _ leaf: String, _ key: String, _ chain: [String]) throws {
            let chainFile = "\(directory)/\(name)-\(kind).pem"
            try ([leaf] + chain).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
                .write(toFile: chainFile, atomically: true, encoding: .utf8)
            arguments += [kind, chainFile, key]
        }
        switch mode {
        case .http: isTLS = false
        case .https(let leaf, let key, let chain):
            isTLS = true
            try certificate("tls", leaf, key, chain)
        case .impersonating(let leaf, let key, let chain):
            isTLS = false
            try certificate("mitm", leaf, key, chain)
        }
        if let credentials { arguments += ["auth", credentials] }
        (pid, port) = try Shell.spawnServer(arguments, portFile: portFile, what: "the proxy on \(address)")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The requests read so far, in order.
    public var requests: [Request] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Request(
                method: object["method"] as? String ?? "", target: object["target"] as? String ?? "",
                authorized: object["authorized"] as? Bool ?? false)
        }
    }

    /// argv: address, port file, log file, then `tls CHAIN KEY`, `mitm CHAIN KEY`, `auth USER:PASSWORD`.
    static let script = #"""
        import base64, json, os, socket, ssl, sys, threading

        # argv: address, port file, log file, then options: tls CHAIN KEY | mitm CHAIN KEY | auth USER:PASS
        address, port_file, log_file = sys.argv[1:4]
        options = sys.argv[4:]
        listen_context = mitm_context = None
        auth = None
        while options:
            kind = options.pop(0)
            if kind == "auth":
                auth = options.pop(0)
                continue
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(options.pop(0), options.pop(0))
            if kind == "tls":
                listen_context = context
            else:
                mitm_context = context
        lock = threading.Lock()

        def record(entry):
            with lock, open(log_file, "a") as log:
                log.write(json.dumps(entry) + "\n")

        def read_head(stream):
            lines = []
            while True:
                line = stream.readline(65536)
                if not line:
                    return None
                if line in (b"\r\n", b"\n"):
                    return lines
                lines.append(line.decode("latin-1").rstrip("\r\n"))

        def pipe(source, sink):
            try:
                while True:
                    data = source.recv(65536)
                    if not data:
                        break
                    sink.sendall(data)
            except OSError:
                pass
            for s in (sink, source):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def serve(client):
            try:
                if listen_context is not None:
                    client = listen_context.wrap_socket(client, server_side=True)
                stream = client.makefile("rb")
                head = read_head(stream)
                if not head:
                    return
                method, target, _ = head[0].split(" ", 2)
                fields = {}
                for line in head[1:]:
                    name, _, value = line.partition(":")
                    fields[name.strip().lower()] = value.strip()
                given = fields.get("proxy-authorization", "")
                record({"method": method, "target": target, "authorized": given != ""})
                if auth is not None and given != "Basic " + base64.b64encode(auth.encode()).decode():
                    client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"p\"\r\nContent-Length: 0\r\n\r\n")
                    return
                if method == "CONNECT":
                    host, _, port = target.rpartition(":")
                    if mitm_context is not None:
                        # Answers the tunnel itself, with its own certificate for the origin's name.
                        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        inner = mitm_context.wrap_socket(client, server_side=True)
                        inner_stream = inner.makefile("rb")
                        request = read_head(inner_stream)
                        record({"method": "MITM", "target": request[0] if request else ""})
                        inner.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nmitm\n")
                        return
                    upstream = socket.create_connection((host.strip("[]"), int(port)), 5)
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
                    pipe(client, upstream)
                else:
                    # An origin-form request for a plain http origin: sent on as one request, then closed.
                    rest = target.split("://", 1)[1]
                    authority, _, path = rest.partition("/")
                    host, _, port = authority.rpartition(":")
                    if not host:
                        host, port = authority, "80"
                    upstream = socket.create_connection((host.strip("[]"), int(port)), 5)
                    length = int(fields.get("content-length", "0"))
                    body = stream.read(length) if length else b""
                    lines = [f"{method} /{path} HTTP/1.1"] + [l for l in head[1:] if not l.lower().startswith(("proxy-", "connection:"))]
                    upstream.sendall(("\r\n".join(lines + ["Connection: close", "", ""])).encode("latin-1") + body)
                    pipe(upstream, client)
            except Exception as error:
                record({"method": "ERROR", "target": repr(error)})
            finally:
                try:
                    client.close()
                except OSError:
                    pass

        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        server = socket.socket(family, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((address, 0))
        server.listen(64)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.getsockname()[1]))
        os.rename(port_file + ".tmp", port_file)
        while True:
            connection, _ = server.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()
        """#
}
