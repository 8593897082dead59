import Foundation

/// A hostile local client of a listener: it opens many connections and holds them, from several source addresses
/// on loopback (any local user can connect from all of 127.0.0.0/8) or to a Unix socket, optionally as another
/// uid. Each connection behaves as one of ``Behaviour``: it holds the request back, or it asks for an answer and
/// does not read it. With `reconnect`, a connection the server closes is opened again 100 ms later, as an attacker
/// holding slots would. A Python process (killed by its PID at `stop` or deinit) that writes what it holds to a file.
public final class ConnectionHog {
    /// What one connection does once it is open.
    public enum Behaviour: String, CaseIterable, Sendable {
        /// Sends nothing.
        case silent
        /// Sends the start of a request and then one header line a second: a request that never ends.
        case drip
        /// The rest ask for `GET /metrics` (or HEAD) whole, with a receive buffer of 1 byte (the kernel's minimum) and
        /// 88-byte segments, and then: never read the answer,
        case unread
        /// read it one byte a second,
        case trickle
        /// send a second request right behind the first and never read,
        case pipeline
        /// send bytes that are not HTTP right behind the request (the server's parser fails) and never read,
        case junk
        /// ask in HTTP/1.0 (an answer delimited by the close) and never read,
        case http10
        /// shut their sending side after the request and never read,
        case halfClose = "halfclose"
        /// ask with HEAD and never read.
        case head

        /// Every way of asking for an answer and not taking it.
        public static let unreadAnswers: [Behaviour] = [.unread, .trickle, .pipeline, .junk, .http10, .halfClose, .head]
    }

    /// What the client holds and has done so far.
    public struct Counts: Sendable, Decodable {
        /// Connections open now, as the client sees them (a close by the server is seen at once, except one queued
        /// behind an answer the client has not read).
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
    ///   - behaviours: what the connections do, taken in turn (connection `i` of a source does `behaviours[i % n]`).
    ///   - reconnect: whether a connection is opened again after the server closed it, or, for one whose answer is
    ///     not read (the close then waits behind the answer, unseen), 30 s after it was opened.
    ///   - user: a uid (and gid) to run as (`setpriv`), for a client that is another local user.
    ///   - directory: where its script and counts go (writable by `user`).
    public init(
        target: String, sources: [String] = [], perSource: Int, behaviours: [Behaviour], reconnect: Bool, user: UInt32? = nil,
        directory: String
    ) throws {
        precondition(!behaviours.isEmpty, "a hog needs at least one behaviour")
        let name = "hog-\(UUID().uuidString)"
        let script = "\(directory)/\(name).py"
        statsFile = "\(directory)/\(name).json"
        try Self.script.write(toFile: script, atomically: true, encoding: .utf8)
        let prefix = user.map { ["/usr/bin/setpriv", "--reuid=\($0)", "--regid=\($0)", "--clear-groups"] } ?? []
        let arguments =
            prefix + [
                "/usr/bin/python3", script, target, statsFile, String(perSource), behaviours.map(\.rawValue).joined(separator: ","),
                reconnect ? "reconnect" : "once",
            ] + sources
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        pid = try Shell.spawn(arguments, stdout: devNull, stderr: devNull)
    }

    /// Starts a client whose connections hold their request back: all silent, all dripping, or (`nil`) in turn.
    public convenience init(
        target: String, sources: [String] = [], perSource: Int, drip: Bool? = nil, reconnect: Bool, user: UInt32? = nil,
        directory: String
    ) throws {
        let behaviours: [Behaviour] = drip.map { $0 ? [.drip] : [.silent] } ?? [.silent, .drip]
        try self.init(
            target: target, sources: sources, perSource: perSource, behaviours: behaviours, reconnect: reconnect, user: user,
            directory: directory)
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

    /// argv: target, counts file, connections per source, behaviours (comma-separated), reconnect|once, source addresses.
    static let script = #"""
        import json, os, select, socket, sys, time

        target, stats_file, per_source, behaviours, reconnect = sys.argv[1:6]
        behaviours = behaviours.split(",")
        sources = sys.argv[6:] or [None]
        slots = [(source, behaviours[i % len(behaviours)]) for source in sources for i in range(int(per_source))]
        REQUEST = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
        REQUESTS = {
            "unread": REQUEST, "trickle": REQUEST, "pipeline": REQUEST + REQUEST, "junk": REQUEST + b"\x00\x01 not http\r\n\r\n",
            "halfclose": REQUEST,
            "http10": b"GET /metrics HTTP/1.0\r\n\r\n", "head": b"HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n",
        }
        # An unread answer hides the server's close behind it: such a connection is given up after this long
        # (the listener's lifetime for a connection), as an attacker keeping its slots would.
        GIVE_UP_AFTER = 30.0
        poller = select.poll()
        sockets = {}  # fd -> (socket, slot index, opened at)
        opened = closed = 0
        retry_at = {index: 0.0 for index in range(len(slots))}

        def connect(index):
            source, behaviour = slots[index]
            unix = target.startswith("/")
            if unix:
                s, address = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM), target
            else:
                host, port = target.rsplit(":", 1)
                s, address = socket.socket(socket.AF_INET, socket.SOCK_STREAM), (host, int(port))
                if source:
                    s.bind((source, 0))
            if behaviour in REQUESTS:
                # Before connect, so that the window the client offers is tiny from the start.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
                if not unix:
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 88)
            s.settimeout(2)
            try:
                s.connect(address)
                if behaviour == "drip":
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n")
                elif behaviour in REQUESTS:
                    s.sendall(REQUESTS[behaviour])
                    if behaviour == "halfclose":
                        s.shutdown(socket.SHUT_WR)
            except OSError:
                s.close()
                return False
            s.setblocking(False)
            # Connections that hold their request back read (an end of file is the server's close); the others
            # never read, and learn of a close from the poll alone.
            reads = behaviour in ("silent", "drip")
            poller.register(s, (select.POLLIN if reads else 0) | select.POLLRDHUP)
            sockets[s.fileno()] = (s, index, time.monotonic())
            return True

        def forget(fd, by_server):
            global closed
            s, index, _ = sockets.pop(fd)
            poller.unregister(fd)
            s.close()
            if by_server:
                closed += 1
            if reconnect == "reconnect":
                retry_at[index] = time.monotonic() + 0.1

        last_second = last_stats = 0.0
        while True:
            now = time.monotonic()
            for index, at in list(retry_at.items()):
                if at <= now:
                    if connect(index):
                        opened += 1
                        del retry_at[index]
                    else:
                        retry_at[index] = now + 0.1
            for fd, events in poller.poll(50):
                if fd not in sockets:
                    continue
                s, index, _ = sockets[fd]
                if events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                    forget(fd, True)
                    continue
                try:
                    data = s.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    forget(fd, True)
            now = time.monotonic()
            if now - last_second >= 1:
                last_second = now
                for fd, (s, index, at) in list(sockets.items()):
                    behaviour = slots[index][1]
                    if behaviour in REQUESTS and now - at >= GIVE_UP_AFTER:
                        forget(fd, False)
                        continue
                    try:
                        if behaviour == "drip":
                            s.send(b"X-Drip: 1\r\n")
                        elif behaviour == "trickle" and s.recv(1) == b"":
                            forget(fd, True)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        forget(fd, True)
            if now - last_stats >= 0.1:
                last_stats = now
                with open(stats_file + ".tmp", "w") as f:
                    json.dump({"open": len(sockets), "opened": opened, "closed": closed}, f)
                os.rename(stats_file + ".tmp", stats_file)
        """#
}
