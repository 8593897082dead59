import Foundation

/// A hostile local client of a listener: it opens many connections and holds them, sending nothing, or the start
/// of a request and then one header line a second (a request that never ends), from several source addresses on
/// loopback (any local user can connect from all of 127.0.0.0/8) or to a Unix socket, optionally as another uid.
/// With `reconnect`, a connection the server closes is opened again 100 ms later, as an attacker holding slots
/// would. A Python process (killed by its PID at `stop` or deinit) that writes what it holds to a file.
public final class ConnectionHog {
    /// What the client holds and has done so far.
    public struct Counts: Sendable, Decodable {
        /// Connections open now, as the client sees them (a close by the server is seen at once).
        public let open: Int
        /// Connections opened since the start.
        public let opened: Int
        /// Connections the server closed.
        public let closed: Int
    }

    public let pid: pid_t
    private let statsFile: String

    /// Starts the client.
    /// - Parameters:
    ///   - target: `HOST:PORT` (IPv4) or the path of a Unix socket.
    ///   - sources: the addresses to connect from (TCP only), `perSource` connections from each.
    ///   - drip: whether the connections send a request head a line at a time (else nothing); `nil` alternates.
    ///   - user: a uid (and gid) to run as (`setpriv`), for a client that is another local user.
    ///   - directory: where its script and counts go.
    public init(
        target: String, sources: [String] = [], perSource: Int, drip: Bool? = nil, reconnect: Bool, user: UInt32? = nil,
        directory: String
    ) throws {
        let name = "hog-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        statsFile = "\(directory)/\(name).json"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let prefix = user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? []
        let mode = drip.map { $0 ? "drip" : "silent" } ?? "mixed"
        let arguments =
            prefix + ["/usr/bin/python3", script, target, statsFile, String(perSource), mode, reconnect ? "reconnect" : "once"] + sources
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        pid = try Shell.spawn(arguments, stdout: devNull, stderr: devNull)
    }

    deinit { stop() }

    /// Kills it (and reaps it): the kernel closes its connections. Safe to call twice.
    public func stop() { Shell.stopIfRunning(pid) }

    /// The latest counts, or zeros before the first are written.
    public var counts: Counts {
        guard let data = FileManager.default.contents(atPath: statsFile), let counts = try? JSONDecoder().decode(Counts.self, from: data)
        else { return Counts(open: 0, opened: 0, closed: 0) }
        return counts
    }

    /// argv: target, counts file, connections per source, silent|drip|mixed, reconnect|once, source addresses.
    static let script = #"""
        import json, os, selectors, socket, sys, time

        target, stats_file, per_source, mode, reconnect = sys.argv[1:6]
        sources = sys.argv[6:] or [None]
        slots = [(source, mode == "drip" or (mode == "mixed" and i % 2 == 1)) for source in sources for i in range(int(per_source))]
        selector = selectors.DefaultSelector()
        opened = closed = 0
        retry_at = {index: 0.0 for index in range(len(slots))}

        def connect(index):
            source, drip = slots[index]
            if target.startswith("/"):
                s, address = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), target
            else:
                host, port = target.rsplit(":", 1)
                s, address = socket.socket(socket.AF_INET, socket.SOCK_STREAM), (host, int(port))
                if source:
                    s.bind((source, 0))
            s.settimeout(2)
            try:
                s.connect(address)
                if drip:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: hog\r\n")
            except OSError:
                s.close()
                return False
            s.setblocking(False)
            selector.register(s, selectors.EVENT_READ, index)
            return True

        last_drip = last_stats = 0.0
        while True:
            now = time.monotonic()
            for index, at in list(retry_at.items()):
                if at <= now:
                    if connect(index):
                        opened += 1
                        del retry_at[index]
                    else:
                        retry_at[index] = now + 0.1
            for key, _ in selector.select(timeout=0.05):
                try:
                    data = key.fileobj.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    closed += 1
                    if reconnect == "reconnect":
                        retry_at[key.data] = time.monotonic() + 0.1
            now = time.monotonic()
            if now - last_drip >= 1:
                last_drip = now
                for key in list(selector.get_map().values()):
                    if slots[key.data][1]:
                        try:
                            key.fileobj.send(b"X-Drip: 1\r\n")
                        except OSError:
                            pass
            if now - last_stats >= 0.1:
                last_stats = now
                with open(stats_file + ".tmp", "w") as f:
                    json.dump({"open": len(selector.get_map()), "opened": opened, "closed": closed}, f)
                os.rename(stats_file + ".tmp", stats_file)
        """#
}
