import CLinuxShims
import FoundationEssentials
import Glibc
import PinpathReachability
import PinpathSecurity
import PinpathSupport
import Synchronization

/// One `tls://` or `tcp://` check on the handshake engine's thread (``HandshakeLoop``): a non-blocking connect to
/// each address in turn (each checked by the reachability gate first), then for `tls://` the TLS handshake with
/// pinpath's verifier inside it, for `tcp://` the exchange if one is asked; it ends with the response, or the
/// error of the same category and close to the same words as a libcurl transfer's.
///
/// An audit (``Plan/audit``, `pinpath audit`) connects the same way, then runs an audit's handshake, which
/// verifies nothing and records what the server showed; its outcome, in an audit's words, is the
/// ``HandshakeAudit``'s, and the check's own result only says that it ended.
///
/// `@unchecked Sendable`: built on the caller's task, then touched only by the engine's thread, except
/// ``cancelled``, which is atomic.
final class HandshakeCheck: @unchecked Sendable {
    /// What the session decided before the check: where to connect, within which times, and what to do once
    /// connected.
    struct Plan {
        let url: URL
        /// `GET tls://host:port`, for messages.
        let label: String
        /// The host the addresses are for (the URL's, or the one dialled instead), for messages.
        let host: String
        let port: Int
        /// Resolved (or numeric) and of the requested IP family, in the order to try them.
        let addresses: [IPAddress]
        let addressCheck: Transfer.AddressCheck?
        /// When the attempt began, before resolution, and when the addresses were known.
        let started: ContinuousClock.Instant
        let resolved: ContinuousClock.Instant
        /// The end of the connection phase (``RequestOptions/connectTimeout`` from ``started``, within ``deadline``):
        /// TCP and the TLS handshake, as libcurl's `CURLOPT_CONNECTTIMEOUT` bounds them.
        let connectDeadline: ContinuousClock.Instant
        /// The end of the request (``RequestOptions/timeout``).
        let deadline: ContinuousClock.Instant
        /// For `tls://`: the handshake to drive once connected.
        let tls: HandshakeTLS?
        /// For `tcp://`: the exchange to run once connected, if any.
        let exchange: TCPExchange?
        /// For an audit: its handshake, run once connected (with neither ``tls`` nor ``exchange``).
        var audit: HandshakeAudit? = nil
    }

    typealias Completion = @Sendable (Result<SessionResponse, HTTPError>) -> Void

    let plan: Plan
    /// Set from any thread to stop the check; the engine ends it at its next wake-up.
    let cancelled = Atomic<Bool>(false)
    /// Called once, on the engine's thread (or the submitter's when the engine refuses the check); set before
    /// the check is submitted.
    var completion: Completion?

    // The engine thread's.
    /// The check's key in the loop and its epoll registration.
    var serial: UInt64 = 0
    /// The sockets registered in the epoll set and what for, to skip `epoll_ctl` when nothing changes.
    var watched: [Int32: UInt32] = [:]
    /// The deadline the loop's heap holds for the check now.
    var deadline: ContinuousClock.Instant?
    private var stage = Stage.connecting
    /// Connections in progress, one per address tried, in the order started: a new one starts every
    /// ``attemptDelay`` while the earlier ones are pending (happy eyeballs), and at once when one fails.
    private var attempts: [(socket: Int32, address: IPAddress)] = []
    private var lastAttemptStarted: ContinuousClock.Instant?
    /// The connected socket the check goes on with (the attempt that connected first).
    private var socket: Int32 = -1
    private var nextAddress = 0
    private var skipped: [TargetReachability] = []
    private var socketsOpened = 0
    /// The last failed connect: the address tried (`127.0.0.1:9`) and the socket's error.
    private var lastConnectFailure: (address: String, error: Int32)?
    private var connected: (address: String, at: ContinuousClock.Instant)?
    private var handshaken: ContinuousClock.Instant?
    /// What the exchange read, or why it failed, once it has ended.
    private var exchangeOutcome: Result<String?, HTTPError>?

    private enum Stage {
        case connecting
        case handshaking(HandshakeTLS.Running)
        case auditing(HandshakeAudit.Running)
        case exchanging(TCPSocketExchange)
        case ended
    }

    init(plan: Plan) {
        self.plan = plan
    }

    /// RFC 8305's connection attempt delay, as libcurl's happy eyeballs waits before it tries the next address.
    static let attemptDelay: Duration = .milliseconds(200)

    deinit {
        // A check dropped unfinished (its loop gave up) still answers its caller and closes its sockets.
        if socket >= 0 { close(socket) }
        for attempt in attempts { close(attempt.socket) }
        completion?(.failure(HTTPError(.cancelled, "\(plan.label): the session is shutting down")))
    }

    /// Calls the completion, once.
    func complete(_ result: Result<SessionResponse, HTTPError>) {
        guard let completion else { return }
        self.completion = nil
        completion(result)
    }

    // MARK: Driven by the loop

    func start(now: ContinuousClock.Instant, loop: HandshakeLoop) {
        startAttempt(now: now, loop: loop)
    }

    /// `descriptor` is ready for what the check waits for (or has an error or hung up).
    func socketReady(_ descriptor: Int32, now: ContinuousClock.Instant, loop: HandshakeLoop) {
        switch stage {
        case .connecting:
            guard let index = attempts.firstIndex(where: { $0.socket == descriptor }) else { return }
            let attempt = attempts.remove(at: index)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
            if error == 0 { return connected(attempt.socket, to: attempt.address, now: now, loop: loop) }
            lastConnectFailure = (Self.text(attempt.address, port: plan.port), error)
            closeDescriptor(attempt.socket)
            // The next address at once when none is pending; otherwise at its time (``attemptDelay``).
            if attempts.isEmpty { startAttempt(now: now, loop: loop) }
        case .handshaking(let handshake):
            advance(handshake, now: now, loop: loop)
        case .auditing(let handshake):
            advance(handshake, now: now, loop: loop)
        case .exchanging(let exchange):
            advance(exchange, now: now, loop: loop)
        case .ended:
            break
        }
    }

    /// The deadline the check set has passed.
    func deadlinePassed(now: ContinuousClock.Instant, loop: HandshakeLoop) {
        switch stage {
        case .connecting:
            guard now < plan.connectDeadline else {
                if let audit = plan.audit {
                    // An audit's words name the address it was waiting for (the first still pending).
                    let address = attempts.first.map { Self.text($0.address, port: plan.port) } ?? "\(plan.host)"
                    return endAudit(audit, .failure(TLSConnectionError.connectTimeout(label: plan.label, address: address)), loop: loop)
                }
                let elapsed = (now - plan.started).wholeMilliseconds
                return fail(HTTPError(.timedOut, "\(plan.label): Connection timed out after \(elapsed) milliseconds"), loop: loop)
            }
            // The pending attempts had their head start: the next address races them.
            startAttempt(now: now, loop: loop)
        case .handshaking(let handshake):
            fail(handshake.timeout(elapsed: now - plan.started), loop: loop)
        case .auditing:
            guard let audit = plan.audit else { return }
            endAudit(audit, .failure(TLSConnectionError.handshakeTimeout(label: plan.label)), loop: loop)
        case .exchanging(let exchange):
            advance(exchange, now: now, loop: loop)
        case .ended:
            break
        }
    }

    /// Ends the check with `error`, closing its socket.
    func fail(_ error: HTTPError, loop: HandshakeLoop) {
        var error = error
        if let connected {
            error.remoteAddress = connected.address
        }
        if error.timings == nil { error.timings = timingsReached(now: .now) }
        end(.failure(error), loop: loop)
    }

    // MARK: Connecting

    /// Starts a connection to the next address the reachability gate lets through; fails when none is left and
    /// none is pending.
    private func startAttempt(now: ContinuousClock.Instant, loop: HandshakeLoop) {
        while nextAddress < plan.addresses.count {
            let address = plan.addresses[nextAddress]
            nextAddress += 1
            if let addressCheck = plan.addressCheck, let verdict = addressCheck(address), verdict.status == .unreachable {
                skipped.append(verdict)
                continue
            }
            let family = address.family == .ipv4 ? AF_INET : AF_INET6
            let fd = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                lastConnectFailure = (Self.text(address, port: plan.port), errno)
                continue
            }
            socketsOpened += 1
            let result = Self.withSocketAddress(address, port: plan.port) { Glibc.connect(fd, $0, $1) }
            if result == 0 { return connected(fd, to: address, now: now, loop: loop) }
            guard errno == EINPROGRESS else {
                lastConnectFailure = (Self.text(address, port: plan.port), errno)
                close(fd)
                continue
            }
            attempts.append((fd, address))
            lastAttemptStarted = now
            loop.watch(fd, writable: true, for: self)
            break
        }
        guard !attempts.isEmpty else {
            if let audit = plan.audit { return endAudit(audit, .failure(auditNoConnection()), loop: loop) }
            return fail(noConnection(now: now), loop: loop)
        }
        // Woken for the next address's turn, or at the end of the connection phase.
        var next = plan.connectDeadline
        if nextAddress < plan.addresses.count, let last = lastAttemptStarted { next = min(next, last + Self.attemptDelay) }
        loop.schedule(self, at: next)
    }

    /// Why no connection was made: every address skipped by the gate, or the last one's failure in libcurl's words
    /// (`Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server (Connection refused)`).
    private func noConnection(now: ContinuousClock.Instant) -> HTTPError {
        if socketsOpened == 0, let unreachable = HTTPError.noAddressReachable(skipped, request: plan.label) { return unreachable }
        let elapsed = (now - plan.started).wholeMilliseconds
        let reason = lastConnectFailure.map { String(cString: strerror($0.error)) } ?? "no address to connect to"
        let code: HTTPError.Code = lastConnectFailure?.error == ETIMEDOUT ? .timedOut : .connectFailed
        return HTTPError(
            code,
            "\(plan.label): Failed to connect to \(plan.host) port \(plan.port) after \(elapsed) ms: Couldn't connect to server (\(reason))"
        )
    }

    /// Why an audit made no connection, in an audit's words (``TLSConnection``'s): the last address's failure, or
    /// none to try (audits have no gate, so none is skipped).
    private func auditNoConnection() -> TLSConnectionError {
        if let failure = lastConnectFailure {
            return TLSConnectionError.connectFailure(failure.error, label: plan.label, address: failure.address)
        }
        return TLSConnectionError(.dnsFailure, "\(plan.label): \(plan.host) has no address")
    }

    /// `fd` connected to `address` first: the other attempts are closed, and the check goes on on it.
    private func connected(_ fd: Int32, to address: IPAddress, now: ContinuousClock.Instant, loop: HandshakeLoop) {
        for attempt in attempts { closeDescriptor(attempt.socket) }
        attempts = []
        socket = fd
        // The clock, not the loop's turn: the turn began before the events ahead of this one were handled.
        let at = ContinuousClock.now
        connected = (Self.text(address, port: plan.port), at)
        if let audit = plan.audit {
            do throws(TLSConnectionError) {
                let handshake = try audit.start(socket: socket)
                stage = .auditing(handshake)
                loop.schedule(self, at: plan.connectDeadline)
                advance(handshake, now: now, loop: loop)
            } catch {
                endAudit(audit, .failure(error), loop: loop)
            }
        } else if let tls = plan.tls {
            do throws(HTTPError) {
                let handshake = try tls.start(socket: socket, label: plan.label)
                stage = .handshaking(handshake)
                loop.schedule(self, at: plan.connectDeadline)
                advance(handshake, now: now, loop: loop)
            } catch {
                fail(error, loop: loop)
            }
        } else if let exchange = plan.exchange {
            // The exchange takes the socket (it closes it) and keeps its own deadline: the request's.
            let running = TCPSocketExchange(
                socket: socket, exchange: exchange, deadline: plan.deadline, label: plan.label,
                completion: { [weak self] in self?.exchangeOutcome = $0 })
            stage = .exchanging(running)
            loop.schedule(self, at: plan.deadline)
            advance(running, now: now, loop: loop)
        } else {
            end(.success(response(now: at)), loop: loop)
        }
    }

    // MARK: After connecting

    private func advance(_ handshake: HandshakeTLS.Running, now: ContinuousClock.Instant, loop: HandshakeLoop) {
        switch handshake.advance() {
        case .wantRead: loop.watch(socket, writable: false, for: self)
        case .wantWrite: loop.watch(socket, writable: true, for: self)
        case .finished(.success(let session)):
            // The clock again: one advance can run the whole handshake (the server's flight may already be in).
            let finished = ContinuousClock.now
            handshaken = finished
            var response = response(now: finished)
            response.tls = session
            end(.success(response), loop: loop)
        case .finished(.failure(var error)):
            error.tlsVersion = handshake.verifierReached ? handshake.protocolVersion : nil
            if handshake.verifierReached { handshaken = .now }
            fail(error, loop: loop)
        }
    }

    private func advance(_ handshake: HandshakeAudit.Running, now: ContinuousClock.Instant, loop: HandshakeLoop) {
        switch handshake.advance() {
        case .wantRead: loop.watch(socket, writable: false, for: self)
        case .wantWrite: loop.watch(socket, writable: true, for: self)
        case .finished(let result):
            handshaken = ContinuousClock.now
            guard let audit = plan.audit else { return }
            endAudit(audit, result, loop: loop)
        }
    }

    /// Ends an audit: its outcome (with the address connected to, if any) for the submitter, and the check's
    /// result, which only says that it ended.
    private func endAudit(_ audit: HandshakeAudit, _ result: Result<AuditedHandshake, TLSConnectionError>, loop: HandshakeLoop) {
        if let error = audit.ended(address: connected?.address, result) { return fail(error, loop: loop) }
        end(.success(response(now: handshaken ?? .now)), loop: loop)
    }

    private func advance(_ exchange: TCPSocketExchange, now: ContinuousClock.Instant, loop: HandshakeLoop) {
        guard exchange.advance(now: now) else {
            loop.watch(exchange.socket, writable: exchange.awaitsWritable, for: self)
            return
        }
        watched[socket] = nil
        socket = -1  // the exchange closed it
        switch exchangeOutcome {
        case .success(let banner):
            var response = response(now: connected?.at ?? now)
            response.banner = banner
            end(.success(response), loop: loop)
        case .failure(let error):
            fail(error, loop: loop)
        case nil:
            fail(HTTPError(.engineUnavailable, "\(plan.label): the exchange ended without a result"), loop: loop)
        }
    }

    // MARK: The end

    private func end(_ result: Result<SessionResponse, HTTPError>, loop: HandshakeLoop) {
        if case .exchanging(let exchange) = stage, case .failure(let error) = result {
            exchange.finish(.failure(error))  // closes the exchange's socket if it is still open
            watched[socket] = nil
            socket = -1
        }
        stage = .ended
        closeSockets()
        loop.remove(self)
        complete(result)
    }

    private func closeSockets() {
        for attempt in attempts { closeDescriptor(attempt.socket) }
        attempts = []
        if socket >= 0 { closeDescriptor(socket) }
        socket = -1
    }

    private func closeDescriptor(_ fd: Int32) {
        close(fd)  // also takes it out of the epoll set
        watched[fd] = nil
    }

    /// `addresses` in the order to try them (RFC 8305 §4): the first family the resolver preferred, then the other
    /// family's first address, and so on alternating, so that a family whose path is broken costs one
    /// ``attemptDelay``, not one per address.
    static func interleavingFamilies(_ addresses: [IPAddress]) -> [IPAddress] {
        guard let first = addresses.first else { return [] }
        let preferred = addresses.filter { $0.family == first.family }
        let other = addresses.filter { $0.family != first.family }
        var order: [IPAddress] = []
        for index in 0..<max(preferred.count, other.count) {
            if index < preferred.count { order.append(preferred[index]) }
            if index < other.count { order.append(other[index]) }
        }
        return order
    }

    /// The response of a check that succeeded: no status, the address, the phases up to `end`.
    private func response(now end: ContinuousClock.Instant) -> SessionResponse {
        SessionResponse(
            url: plan.url, statusCode: 0, headers: HeaderFields(), body: [], httpVersion: "", remoteAddress: connected?.address,
            timings: timings(end: handshaken ?? end))
    }

    /// blackbox_exporter's phases of the check, up to `end`.
    private func timings(end: ContinuousClock.Instant) -> PhaseTimings {
        var timings = PhaseTimings()
        timings.resolve = (plan.resolved - plan.started).inSeconds
        if let connected {
            timings.connect = (connected.at - plan.resolved).inSeconds
            if let handshaken { timings.tls = (handshaken - connected.at).inSeconds }
        }
        timings.total = (end - plan.started).inSeconds
        return timings
    }

    /// A failed check's timings with the phases it reached, as ``TransferInfo/timingsReached(connected:handshakeReached:)``
    /// gives them for a libcurl transfer: `tls` once the handshake reached pinpath's verifier, timed to the end.
    private func timingsReached(now: ContinuousClock.Instant) -> PhaseTimings {
        var timings = timings(end: now)
        var reached = ["resolve"]
        if connected != nil { reached.append("connect") }
        if let connected, handshaken != nil {
            reached.append("tls")
            timings.tls = (now - connected.at).inSeconds
        }
        timings.phasesReached = reached
        return timings
    }

    /// `127.0.0.1:443`, `[::1]:443`: libcurl's `remote_address` form.
    static func text(_ address: IPAddress, port: Int) -> String {
        address.family == .ipv6 ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    /// Calls `body` with a `sockaddr_in` or `sockaddr_in6` for `address` and `port`, which is 1–65535:
    /// `Session.sendOnce` refuses any other before a check is planned, so the truncation below never changes it.
    static func withSocketAddress<Value>(
        _ address: IPAddress, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Value
    ) -> Value {
        let bytes = address.bytes
        if address.family == .ipv4 {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
            withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var socketAddress = sockaddr_in6()
        socketAddress.sin6_family = sa_family_t(AF_INET6)
        socketAddress.sin6_port = UInt16(truncatingIfNeeded: port).bigEndian
        withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }
}
