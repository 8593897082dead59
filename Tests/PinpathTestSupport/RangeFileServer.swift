import Foundation

/// An https (or http) server on 127.0.0.1, or an address of a test network's namespace (Python's standard
/// library, `/usr/bin/python3`), that serves one file at every
/// path, as a file server does: `ETag` (strong) and `Last-Modified`, `Range: bytes=N-` answered `206` with
/// `Content-Range`, `If-Range` honoured (another validator gets the whole file, `200`), a range past the end
/// `416` with `bytes */LENGTH`. Then it misbehaves as told (``Misbehaviour``), for the download's attack and
/// failure tests. Every request is recorded (method, path, headers) once its head was read, and every accepted
/// connection counted, so that "received nothing" can be told from "never connected". Killed by its PID.
public final class RangeFileServer {
    /// One way to depart from a well-behaved file server.
    public enum Misbehaviour: Sendable {
        /// The first `responses` responses send `bytes` of their body, then close the connection.
        case dropAfter(bytes: Int, responses: Int = 1)
        /// Ranges are ignored: every answer is `200` with the whole file.
        case ignoreRange
        /// A range request gets `206` whose `Content-Range` starts one byte after the byte asked for.
        case shiftedRange
        /// Every response sends this many bytes more than its `Content-Length` announces.
        case excess(bytes: Int)
        /// A range request is redirected (302) to `url` (a mirror).
        case redirectRanges(to: String)
        /// Connections after the first get this leaf, key and chain (the same port, another key).
        case switchIdentityAfterFirst(leaf: String, key: String, chain: [String])
        /// No `ETag` and no `Last-Modified`: nothing a resumption could be validated against.
        case noValidators
        /// A range request gets `206` with this `Content-Range`, sent as it is (controls included).
        case contentRange(String)
        /// A `206` announces this `Content-Length` (whatever it sends).
        case rangeContentLength(String)
        /// The body goes out one byte a second (its `Content-Length` announced whole).
        case trickle
        /// A dropped response (`dropAfter`) sends its bytes, then holds the connection open until
        /// ``releaseDrops()`` (at most 60 s) before closing it: a test changes the scene during the transfer, then
        /// lets the drop come, with no race against the server's pace.
        case dropWhenReleased
    }

    public let port: UInt16
    public let pid: pid_t
    /// The address it listens on.
    public let address: String
    private let isTLS: Bool
    private let log: String
    private let etagFile: String
    private let releaseFile: String

    /// `https://127.0.0.1:PORT` (`http://…` without a certificate).
    public var origin: String { "\(isTLS ? "https" : "http")://\(address):\(port)" }

    /// One request as the server read it.
    public struct Request: Sendable {
        public let method: String
        public let path: String
        public let headers: [(name: String, value: String)]
        public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    /// Starts it.
    /// - Parameters:
    ///   - file: the file served.
    ///   - certificate: the leaf, its key and the chain sent after it (PEM files); `nil` serves plain http.
    ///   - misbehaviours: how it departs from a file server's behaviour.
    ///   - port: the port to listen on (another server's, after it stopped: the same address, another key);
    ///     0 for any free one.
    ///   - address: an IPv4 address to listen on (one of `namespace`'s with a namespace).
    ///   - namespace: a network namespace to run it in (`ip netns exec`), such as a test network's gateway.
    ///   - directory: where its script, log and port file go.
    public init(
        serving file: String, certificate: (leaf: String, key: String, chain: [String])?, misbehaviours: [Misbehaviour] = [],
        port: UInt16 = 0, address: String = "127.0.0.1", namespace: String? = nil, directory: String
    ) throws {
        let name = "range-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        let portFile = "\(directory)/\(name).port"
        log = "\(directory)/\(name).jsonl"
        etagFile = "\(directory)/\(name).etag"
        releaseFile = "\(directory)/\(name).release"
        try "\"v1\"".write(toFile: etagFile, atomically: true, encoding: .utf8)
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        self.address = address
        isTLS = certificate != nil
        var settings: [String: Any] = ["address": address, "port": Int(port), "file": file, "log": log, "etag": etagFile]
        if let certificate {
            settings["chain"] = try Self.chainFile(certificate, directory: directory, name: "\(name)-chain")
            settings["key"] = certificate.key
        }
        for misbehaviour in misbehaviours {
            switch misbehaviour {
            case .dropAfter(let bytes, let responses): settings["drop_after"] = [bytes, responses]
            case .ignoreRange: settings["ignore_range"] = true
            case .shiftedRange: settings["shifted_range"] = true
            case .excess(let bytes): settings["excess"] = bytes
            case .redirectRanges(let url): settings["redirect_ranges"] = url
            case .switchIdentityAfterFirst(let leaf, let key, let chain):
                settings["second_chain"] = try Self.chainFile((leaf, key, chain), directory: directory, name: "\(name)-second")
                settings["second_key"] = key
            case .noValidators: settings["no_validators"] = true
            case .contentRange(let value): settings["content_range"] = value
            case .rangeContentLength(let value): settings["range_content_length"] = value
            case .trickle: settings["trickle"] = true
            case .dropWhenReleased: settings["release"] = releaseFile
            }
        }
        let settingsFile = "\(directory)/\(name).json"
        try JSONSerialization.data(withJSONObject: settings).write(to: URL(fileURLWithPath: settingsFile))
        // `ip netns exec` execs the server: the PID is still the server's.
        (pid, self.port) = try Shell.spawnServer(
            (namespace.map { ["ip", "netns", "exec", $0] } ?? []) + ["/usr/bin/python3", script, settingsFile, portFile],
            portFile: portFile,
            what: "the range file server on \(address)")
    }

    deinit { stop() }

    /// Kills it (and reaps it). Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// Changes the `ETag` it sends and accepts in `If-Range` (the file "changed" under the same name).
    public func setETag(_ etag: String) throws {
        try etag.write(toFile: etagFile, atomically: true, encoding: .utf8)
    }

    /// Lets the responses held by ``Misbehaviour/dropWhenReleased`` close their connections (and any later one
    /// close at once).
    public func releaseDrops() throws {
        try "".write(toFile: releaseFile, atomically: true, encoding: .utf8)
    }

    /// Connections accepted so far (a TLS handshake refused by the client included).
    public var connections: Int { records.filter { $0["event"] as? String == "connection" }.count }

    /// The requests received so far, in order.
    public var requests: [Request] {
        records.filter { $0["event"] as? String == "request" }.map { object in
            Request(
                method: object["method"] as? String ?? "", path: object["path"] as? String ?? "",
                headers: (object["headers"] as? [[String]] ?? []).map { (name: $0[0], value: $0[1]) })
        }
    }

    private var records: [[String: Any]] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    private static func chainFile(_ certificate: (leaf: String, key: String, chain: [String]), directory: String, name: String) throws
        -> String
    {
        let path = "\(directory)/\(name).pem"
        try ([certificate.leaf] + certificate.chain).map { try String(contentsOfFile: $0, encoding: .utf8) }.joined()
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// argv: settings file (JSON), port file.
    static let script = #"""
        import email.utils, json, os, socket, ssl, sys, threading, time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        settings = json.load(open(sys.argv[1]))
        port_file = sys.argv[2]
        data = open(settings["file"], "rb").read()
        modified = email.utils.formatdate(os.stat(settings["file"]).st_mtime, usegmt=True)
        lock = threading.Lock()
        state = {"connections": 0, "drops_left": settings.get("drop_after", [0, 0])[1]}

        def record(entry):
            with lock, open(settings["log"], "a") as log:
                log.write(json.dumps(entry) + "\n")

        def context(chain, key):
            made = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            made.load_cert_chain(chain, key)
            return made
        first_context = context(settings["chain"], settings["key"]) if "chain" in settings else None
        second_context = context(settings["second_chain"], settings["second_key"]) if "second_chain" in settings else first_context

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                record({"event": "request", "method": self.command, "path": self.path,
                        "headers": [[k, v] for k, v in self.headers.items()]})
                etag = open(settings["etag"]).read()
                asked = self.headers.get("Range")
                if_range = self.headers.get("If-Range")
                if asked and "redirect_ranges" in settings:
                    self.send_response(302)
                    self.send_header("Location", settings["redirect_ranges"])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                start = None
                if asked and asked.startswith("bytes=") and asked.endswith("-") and not settings.get("ignore_range"):
                    if if_range is None or if_range == etag or if_range == modified:
                        start = int(asked[6:-1])
                if start is not None and start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", "bytes */%d" % len(data))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = data[start:] if start is not None else data
                self.send_response(206 if start is not None else 200)
                self.send_header("Content-Type", "application/octet-stream")
                if not settings.get("no_validators"):
                    self.send_header("ETag", etag)
                    self.send_header("Last-Modified", modified)
                self.send_header("Accept-Ranges", "bytes")
                if start is not None:
                    shown = start + 1 if settings.get("shifted_range") else start
                    self.send_header("Content-Range", settings.get("content_range", "bytes %d-%d/%d" % (shown, len(data) - 1, len(data))))
                announced = settings.get("range_content_length") if start is not None else None
                self.send_header("Content-Length", announced or str(len(body)))
                self.end_headers()
                with lock:
                    drop = state["drops_left"] > 0
                    if drop:
                        state["drops_left"] -= 1
                if drop:
                    self.wfile.write(body[:settings["drop_after"][0]])
                    self.wfile.flush()
                    if "release" in settings:
                        deadline = time.monotonic() + 60
                        while not os.path.exists(settings["release"]) and time.monotonic() < deadline:
                            time.sleep(0.02)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if settings.get("trickle"):
                    for i in range(len(body)):
                        self.wfile.write(body[i:i + 1])
                        self.wfile.flush()
                        time.sleep(1)
                    return
                self.wfile.write(body)
                if "excess" in settings:
                    self.wfile.write(b"X" * settings["excess"])
                self.wfile.flush()

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            def get_request(self):
                connection, peer = self.socket.accept()
                with lock:
                    state["connections"] += 1
                    number = state["connections"]
                record({"event": "connection", "number": number})
                chosen = first_context if number == 1 else second_context
                if chosen is None:
                    return connection, peer
                return chosen.wrap_socket(connection, server_side=True, do_handshake_on_connect=False), peer
            def handle_error(self, request, client_address):
                pass

        server = Server((settings["address"], settings["port"]), Handler)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#
}
