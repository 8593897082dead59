import CLinuxShims
import Glibc

/// The handshake engine's thread (``HandshakeEngine``): the checks it runs, by serial; their sockets in one epoll set,
/// each registered with its check's serial (the high 32 bits) and its descriptor (the low); their deadlines in a
/// heap. Touched only by that thread.
final class HandshakeLoop {
    /// The epoll token of the engine's eventfd; checks' serials start above it.
    static let wakeToken: UInt64 = 0

    private let running: HandshakeEngine.Running
    private var checks: [UInt64: HandshakeCheck] = [:]
    private var deadlines = DeadlineHeap()
    private var lastSerial = wakeToken

    init(_ running: HandshakeEngine.Running) {
        self.running = running
    }

    func run() {
        let service = running.service
        var added: [HandshakeCheck] = []
        var cancelled: [HandshakeCheck] = []
        var ready = [epoll_event](repeating: epoll_event(), count: 256)
        while true {
            service.withInbox { inbox in
                swap(&added, &inbox.added)
                swap(&cancelled, &inbox.cancelled)
            }
            guard service.phase == .running else {
                end(HTTPError.Code.cancelled, "the session is shutting down")
                return
            }
            var now = ContinuousClock.now
            for check in added {
                if check.cancelled.load(ordering: .acquiring) {
                    check.complete(.failure(HTTPError(.cancelled, "\(check.plan.label): cancelled")))
                    continue
                }
                lastSerial += 1
                check.serial = lastSerial
                checks[lastSerial] = check
                check.start(now: now, loop: self)
            }
            added.removeAll(keepingCapacity: true)
            for check in cancelled where checks[check.serial] === check {
                check.fail(HTTPError(.cancelled, "\(check.plan.label): cancelled"), loop: self)
            }
            cancelled.removeAll(keepingCapacity: true)
            expireDeadlines(now: now)
            // Rounded up, so that a wait never ends just before a deadline and spins; -1 waits for a socket or a wake-up.
            let timeout = deadlines.first.map { Int32(clamping: max(0, now.duration(to: $0.instant).millisecondsRoundedUp)) } ?? -1
            let count = service.waitForWork(ifIdle: \.isEmpty) {
                epoll_wait(running.waitSet, &ready, Int32(ready.count), timeout)
            }
            guard let count else { continue }  // work came in: take it first
            if count < 0 {
                guard errno == EINTR else {
                    end(.engineUnavailable, "epoll_wait failed: \(String(cString: strerror(errno)))")
                    return
                }
                continue
            }
            now = ContinuousClock.now
            for event in ready[..<Int(count)] {
                let token = event.data.u64
                guard token != Self.wakeToken else {
                    var counter: UInt64 = 0
                    _ = read(running.wakeDescriptor, &counter, 8)
                    continue
                }
                // A step can take long (a server's key exchange: DH groups of up to 4,096 bits are computed); a check
                // whose time ran out meanwhile ends now, timed out, before it is stepped on.
                now = ContinuousClock.now
                expireDeadlines(now: now)
                // A check that ended earlier in this batch is gone: its event is stale.
                checks[token >> 32]?.socketReady(Int32(truncatingIfNeeded: token & 0xffff_ffff), now: now, loop: self)
            }
            expireDeadlines(now: now)
        }
    }

    // MARK: For the checks

    /// Watches `socket` for `check`: readable, or writable (a connect in progress, OpenSSL wanting to write).
    /// Level-triggered: a check says again what it waits for after each step, and only a change costs a call.
    func watch(_ socket: Int32, writable: Bool, for check: HandshakeCheck) {
        let events = writable ? EPOLLOUT.rawValue : EPOLLIN.rawValue
        let current = check.watched[socket]
        guard current != events else { return }
        var event = epoll_event()
        event.events = events
        // The check's serial and the socket: a check may wait on several connections at once.
        event.data.u64 = check.serial << 32 | UInt64(UInt32(bitPattern: socket))
        let operation = current == nil ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
        if epoll_ctl(running.waitSet, operation, socket, &event) != 0 {
            let reason = String(cString: strerror(errno))
            check.fail(HTTPError(.engineUnavailable, "\(check.plan.label): cannot watch the socket with epoll: \(reason)"), loop: self)
            return
        }
        check.watched[socket] = events
    }

    /// Sets the instant at which `check` is told its time is up (``HandshakeCheck/deadlinePassed(now:loop:)``).
    func schedule(_ check: HandshakeCheck, at instant: ContinuousClock.Instant) {
        guard check.deadline != instant else { return }
        check.deadline = instant
        deadlines.insert(instant, serial: check.serial)
    }

    /// Forgets a check that has completed.
    func remove(_ check: HandshakeCheck) {
        if checks[check.serial] === check { checks[check.serial] = nil }
    }

    // MARK: Private

    private func expireDeadlines(now: ContinuousClock.Instant) {
        while let first = deadlines.first, first.instant <= now {
            _ = deadlines.removeFirst()
            // An entry whose check has gone or moved its deadline is stale.
            guard let check = checks[first.serial], check.deadline == first.instant else { continue }
            check.deadlinePassed(now: now, loop: self)
        }
    }

    /// Ends every check (``HTTPError/Code/cancelled`` on a stop) and the service: checks posted from now on are refused.
    private func end(_ code: HTTPError.Code, _ reason: String) {
        for check in Array(checks.values) { check.fail(HTTPError(code, "\(check.plan.label): \(reason)"), loop: self) }
        checks.removeAll()
        deadlines.removeAll()
        let left = running.service.finish { inbox in
            defer { inbox = HandshakeEngine.Inbox() }
            return inbox.added
        }
        for check in left { check.complete(.failure(HTTPError(code, "\(check.plan.label): \(reason)"))) }
    }
}
