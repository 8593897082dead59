import Foundation
import Synchronization

/// A misbehaving server on 127.0.0.1, one behaviour per instance, for the request core's failure paths
/// (issue 6). In-process: an accept thread and one thread per connection, all joined by ``stop()``, which
/// also closes every socket. The TLS behaviours put `openssl s_server` behind an in-process relay, so that
/// the kit decides which chain each connection gets.
public final class HostileServer {
    /// A certificate, its key and the certificates sent after it, as files.
    public struct TLSIdentity: Sendable {
        public var certificate: String
        public var key: String
        public var chain: [String]
        public init(certificate: String, key: String, chain: [String]) {
            self.certificate = certificate
            self.key = key
            self.chain = chain
        }
    }

    /// What the server does with each connection.
    public enum Behaviour: Sendable {
        /// Accepts, reads and discards, never answers.
        case silent
        /// Sends a status line, then one more header line every 50 ms, forever (slowloris in reverse).
        case slowloris
        /// Sends a status line, then header lines as fast as the client reads them, forever.
        case headerFlood
        /// Sends a 1 GiB body as fast as the client reads it, announced with `Content-Length` or, when not
        /// `announced`, in 64 KiB chunks (`Transfer-Encoding: chunked`), so that only counting can stop it.
        case hugeBody(announced: Bool)
        /// Answers with this first line instead of a status line (then an empty header section), such as
        /// `HTTP/1.1 two hundred OK` (no status code) or `SSH-2.0-OpenSSH_9.2` (not HTTP at all).
        case malformedStatusLine(String)
        /// Sends a header line of 128 KiB (libcurl's limit for one line is 100 KiB).
        case oversizedHeader
        /// Sends headers and 1000 of the 1 MiB announced, then resets the connection (RST, SO_LINGER 0).
        case resetMidResponse
        /// Reads the ClientHello and answers with a fatal `handshake_failure` alert record.
        case tlsAlert
        /// A TLS 1.3 server that requires a client certificate: the client's handshake completes, then the
        /// server's `certificate_required` alert arrives where the client expects the response.
        case tlsAlertAfterHandshake(TLSIdentity)
        /// A TLS server whose `Certificate` message holds 50 certificates: the identity's, then filler.
        case manyCertificates(TLSIdentity, filler: [String])
        /// Connection 1 gets the first identity, connection 2 the second, and so on alternating.
        case switchingCertificates(TLSIdentity, TLSIdentity)
        /// A TLS server (the identity's, behind `openssl s_server`) whose every byte to the client comes 50 ms after
        /// the last: a valid handshake, trickled (slowloris in the handshake).
        case trickledTLS(TLSIdentity)
        /// A bound port that does not listen: every connect is refused (RST).
        case refuse
        /// Answers every request with `200 OK`, these extra header lines (`Name: value`) and this body: text
        /// chosen to make the client's own checks of it costly, such as a pattern that backtracks.
        case craftedBody(String, headers: [String] = [])
        /// Answers every request with this status line, a chunked body `ok` and these trailing fields
        /// (`Name: value`) after its last chunk: fields a client must not merge into the header section.
        case trailingFields(status: String, trailers: [String])
    }

    /// The port on 127.0.0.1.
    public let port: UInt16
    public let behaviour: Behaviour
    /// Connections accepted so far.
    public var connections: Int { state.accepted.load(ordering: .relaxed) }
    /// The kit's threads that have not returned yet (0 after ``stop()``).
    public var runningThreads: Int { state.running.load(ordering: .relaxed) }
    /// Accepted sockets and relay sockets to the backends not closed yet (0 after ``stop()``).
    public var openSockets: Int { state.open.load(ordering: .relaxed) }
    /// Response bytes written so far (all connections): how far a large body got before the client quit.
    public var bytesSent: Int { state.sent.load(ordering: .relaxed) }

    fileprivate final class State: Sendable {
        let accepted = Atomic<Int>(0)
        let running = Atomic<Int>(0)
        let open = Atomic<Int>(0)
        let sent = Atomic<Int>(0)
        /// A pipe whose read end is readable once stop() is called: every blocking wait polls it too.
        let wake: Int32
        let wakeWriter: Int32
        let threads = Mutex<[JoinableThread]>([])
        let stopped = Atomic<Bool>(false)
        init(wake: Int32, wakeWriter: Int32) {
            self.wake = wake
            self.wakeWriter = wakeWriter
        }
    }

    private let state: State
    private let listener: Int32
    private let backends: [TLSServer]

    /// Starts the server and its accept thread.
    public init(_ behaviour: Behaviour, directory: String = FileManager.default.temporaryDirectory.path) throws {
        self.behaviour = behaviour
        var backends: [TLSServer] = []
        switch behaviour {
        case .manyCertificates(let identity, let filler):
            backends = [try TLSServer(identity, extraChain: filler, in: directory)]
        case .switchingCertificates(let first, let second):
            backends = [try TLSServer(first, in: directory), try TLSServer(second, in: directory)]
        case .tlsAlertAfterHandshake(let identity):
            backends = [try TLSServer(identity, in: directory, extraArguments: ["-Verify", "1", "-tls1_3"])]
        case .trickledTLS(let identity):
            backends = [try TLSServer(identity, in: directory)]
        default:
            break
        }
        self.backends = backends
        let (fd, port) = try TLSServer.bindLoopback()
        self.port = port
        listener = fd
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else {
            close(fd)
            throw ShellError(description: "pipe: \(errno)")
        }
        for end in pipe { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }  // not inherited by a spawned pinpath
        state = State(wake: pipe[0], wakeWriter: pipe[1])
        if case .refuse = behaviour { return }  // bound, never listening: the kernel answers SYN with RST
        guard listen(fd, 64) == 0 else {
            close(fd)
            close(state.wake)
            close(state.wakeWriter)
            throw ShellError(description: "listen: \(errno)")
        }
        let state = self.state
        let backendPorts = backends.map(\.port)
        let thread = try JoinableThread(state) {
            Self.acceptLoop(listener: fd, behaviour: behaviour, backendPorts: backendPorts, state: state)
        }
        state.threads.withLock { $0.append(thread) }
    }

    /// Stops accepting, ends every connection, joins every thread, closes every socket and kills the
    /// `openssl s_server` backends. Safe to call twice.
    public func stop() {
        guard !state.stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt8 = 1
        _ = write(state.wakeWriter, &one, 1)  // never read: the pipe stays readable for every poll
        // Connection threads are added by the accept thread; join until no thread is left.
        while let thread = state.threads.withLock({ $0.popLast() }) { thread.join() }
        close(listener)
        close(state.wake)
        close(state.wakeWriter)
        for backend in backends { backend.stop() }
    }

    deinit { stop() }

    // MARK: Threads

    private static func acceptLoop(listener: Int32, behaviour: Behaviour, backendPorts: [UInt16], state: State) {
        while true {
            guard wait(for: listener, events: Int16(POLLIN), state: state) else { return }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            let number = state.accepted.add(1, ordering: .relaxed).newValue
            state.open.add(1, ordering: .relaxed)
            do {
                let thread = try JoinableThread(state) {
                    defer {
                        close(connection)
                        state.open.subtract(1, ordering: .relaxed)
                    }
                    serve(connection, number: number, behaviour: behaviour, backendPorts: backendPorts, state: state)
                }
                state.threads.withLock { $0.append(thread) }
            } catch {
                close(connection)
                state.open.subtract(1, ordering: .relaxed)
            }
        }
    }

    private static func serve(_ fd: Int32, number: Int, behaviour: Behaviour, backendPorts: [UInt16], state: State) {
        let connection = Connection(fd: fd, state: state)
        switch behaviour {
        case .silent:
            connection.drain()
        case .slowloris:
            guard connection.send("HTTP/1.1 200 OK\r\n") else { return }
            var line = 0
            while connection.pause(milliseconds: 50) {
                line += 1
                guard connection.send("X-Slow-\(line): still coming\r\n") else { return }
            }
        case .headerFlood:
            guard connection.send("HTTP/1.1 200 OK\r\n") else { return }
            let lines = Array((0..<1000).map { "X-Flood-\($0): \(String(repeating: "f", count: 40))\r\n" }.joined().utf8)
            while connection.send(lines) {}
        case .hugeBody(let announced):
            connection.readRequest()
            let framing = announced ? "Content-Length: \(1 << 30)" : "Transfer-Encoding: chunked"
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\(framing)\r\n\r\n") else { return }
            let bytes = [UInt8](repeating: 0x61, count: 64 << 10)
            let chunk = announced ? bytes : Array("10000\r\n".utf8) + bytes + Array("\r\n".utf8)
            for _ in 0..<((1 << 30) / bytes.count) {
                guard connection.send(chunk) else { return }
            }
            if !announced { _ = connection.send("0\r\n\r\n") }
            connection.drain()
        case .malformedStatusLine(let line):
            connection.readRequest()
            _ = connection.send("\(line)\r\nContent-Length: 0\r\n\r\n")
            connection.drain()
        case .oversizedHeader:
            connection.readRequest()
            let big = String(repeating: "a", count: 128 << 10)
            _ = connection.send("HTTP/1.1 200 OK\r\nX-Big: \(big)\r\nContent-Length: 0\r\n\r\n")
            connection.drain()
        case .resetMidResponse:
            connection.readRequest()
            guard connection.send("HTTP/1.1 200 OK\r\nContent-Length: \(1 << 20)\r\n\r\n" + String(repeating: "x", count: 1000)),
                connection.pause(milliseconds: 100)
            else { return }
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
        case .tlsAlert:
            connection.readRequest()  // the ClientHello
            // TLS record: alert (21), TLS 1.2 record version, length 2, fatal (2), handshake_failure (40).
            _ = connection.send([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])
            connection.drain()
        case .craftedBody(let body, let headers):
            connection.readRequest()
            let fields = (["Content-Type: text/plain", "Content-Length: \(body.utf8.count)"] + headers).map { $0 + "\r\n" }.joined()
            _ = connection.send("HTTP/1.1 200 OK\r\n\(fields)\r\n\(body)")
            connection.drain()
        case .trailingFields(let status, let trailers):
            connection.readRequest()
            let fields = trailers.map { $0 + "\r\n" }.joined()
            _ = connection.send("\(status)\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n2\r\nok\r\n0\r\n\(fields)\r\n")
            connection.drain()
        case .manyCertificates, .switchingCertificates, .tlsAlertAfterHandshake:
            connection.relay(to: backendPorts[(number - 1) % backendPorts.count])
        case .trickledTLS:
            connection.relay(to: backendPorts[0], trickle: true)
        case .refuse:
            break
        }
    }

    /// Waits until `fd` is ready for `events` (true) or stop() was called (false).
    private static func wait(for fd: Int32, events: Int16, state: State, milliseconds: Int32 = -1) -> Bool {
        var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: state.wake, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&fds, 2, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0 && fds[1].revents == 0 && fds[0].revents != 0
        }
    }

    /// One accepted socket: writes and reads that give up when the client goes away or stop() is called.
    private struct Connection {
        let fd: Int32
        let state: State

        func send(_ text: String) -> Bool { send(Array(text.utf8)) }

        func send(_ bytes: [UInt8]) -> Bool {
            var offset = 0
            while offset < bytes.count {
                guard HostileServer.wait(for: fd, events: Int16(POLLOUT), state: state) else { return false }
                let written = bytes[offset...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if written < 0 {
                    if errno == EAGAIN || errno == EINTR { continue }
                    return false
                }
                offset += written
                state.sent.add(written, ordering: .relaxed)
            }
            return true
        }

        /// Reads what the client sent first (a request, a ClientHello): up to the first pause or 64 KiB.
        func readRequest() {
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            guard HostileServer.wait(for: fd, events: Int16(POLLIN), state: state, milliseconds: 2000) else { return }
            _ = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        }

        /// Reads and discards until the client closes or stop() is called.
        func drain() {
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while HostileServer.wait(for: fd, events: Int16(POLLIN), state: state) {
                let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { return }
            }
        }

        /// Sleeps; false when stop() was called meanwhile.
        func pause(milliseconds: Int32) -> Bool {
            var wake = pollfd(fd: state.wake, events: Int16(POLLIN), revents: 0)
            return poll(&wake, 1, milliseconds) == 0
        }

        /// Copies bytes both ways between the client and a backend on 127.0.0.1 until either side closes; with
        /// `trickle`, the backend's bytes one at a time, 50 ms apart.
        func relay(to port: UInt16, trickle: Bool = false) {
            guard let backend = try? TLSServer.connectLoopback(port: port) else { return }
            state.open.add(1, ordering: .relaxed)
            defer {
                close(backend)
                state.open.subtract(1, ordering: .relaxed)
            }
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: backend, events: Int16(POLLIN), revents: 0),
                pollfd(fd: state.wake, events: Int16(POLLIN), revents: 0),
            ]
            while true {
                let ready = poll(&fds, 3, -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0, fds[2].revents == 0 else { return }
                for (from, to) in [(0, backend), (1, fd)] where fds[from].revents != 0 {
                    let count = recv(fds[from].fd, &buffer, buffer.count, 0)
                    guard count > 0 else { return }
                    if trickle && to == fd {
                        for byte in buffer[..<count] {
                            guard pause(milliseconds: 50), send([byte]) else { return }
                        }
                        continue
                    }
                    // Blocking send: both ends are loopback sockets that keep reading until they close.
                    guard Glibc.send(to, buffer, count, Int32(MSG_NOSIGNAL)) == count else { return }
                    if to == fd { state.sent.add(count, ordering: .relaxed) }
                }
            }
        }
    }

    // MARK: Fixtures

    /// `count` self-signed certificates (one EC key, distinct subjects) in `directory`, generated once per
    /// directory: the filler of a 50-certificate `Certificate` message.
    public static func fillerCertificates(count: Int, in directory: String) throws -> [String] {
        let key = "\(directory)/filler.key"
        if !FileManager.default.fileExists(atPath: key) {
            try Shell.check(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key])
        }
        return try (1...count).map { index in
            let path = "\(directory)/filler-\(index).pem"
            if !FileManager.default.fileExists(atPath: path) {
                try Shell.check([
                    "openssl", "req", "-new", "-x509", "-key", key, "-subj", "/CN=Filler \(index)", "-days", "30", "-out", path,
                ])
            }
            return path
        }
    }
}

extension TLSServer {
    /// `openssl s_server -www` for an identity, with more certificates appended to the chain it sends.
    fileprivate convenience init(
        _ identity: HostileServer.TLSIdentity, extraChain: [String] = [], in directory: String, extraArguments: [String] = []
    ) throws {
        try self.init(
            certificate: identity.certificate, key: identity.key, chain: identity.chain + extraChain, in: directory,
            extraArguments: extraArguments)
    }
}

/// A pthread that runs a closure and is joined, for the kit's accept and connection threads; counted in
/// `running` from before it starts until its closure returns.
private struct JoinableThread: Sendable {
    private let thread: pthread_t

    private final class Body {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    fileprivate init(_ state: HostileServer.State, _ body: @escaping @Sendable () -> Void) throws {
        var thread = pthread_t()
        state.running.add(1, ordering: .relaxed)
        let box = Unmanaged.passRetained(
            Body {
                body()
                state.running.subtract(1, ordering: .relaxed)
            }
        ).toOpaque()
        let created = pthread_create(
            &thread, nil,
            { argument in
                Unmanaged<Body>.fromOpaque(argument!).takeRetainedValue().run()
                return nil
            }, box)
        guard created == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            state.running.subtract(1, ordering: .relaxed)
            throw ShellError(description: "pthread_create: \(created)")
        }
        self.thread = thread
    }

    func join() { pthread_join(thread, nil) }
}
