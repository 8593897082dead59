import CLinuxShims
import Glibc
import PinpathSupport
import Synchronization

/// Runs a session's connection checks that need no libcurl (`tls://` and `tcp://` without a proxy) on one thread:
/// non-blocking sockets in one epoll set, OpenSSL's client handshake driven as far as each socket allows, the
/// checks' deadlines in a heap (``HandshakeLoop``), and an eventfd that wakes the thread when a check is added or
/// cancelled. No thread per check and no libcurl transfer: a check costs a socket and, for `tls://`, an `SSL` from
/// the session's shared context.
///
/// Started by the first check, so a session that never makes one costs no thread. ``stop()`` ends the checks in
/// flight with ``HTTPError/Code/cancelled``; later ones fail so at once.
final class HandshakeEngine: Sendable {
    struct Inbox {
        var added: [HandshakeCheck] = []
        var cancelled: [HandshakeCheck] = []

        var isEmpty: Bool { added.isEmpty && cancelled.isEmpty }
    }

    /// The thread's descriptors and its inbox; the loop holds them until it returns, so they are closed after its
    /// last use even when the engine itself goes first.
    final class Running: Sendable {
        let service: ServiceThread<Inbox>
        /// Written to wake the thread from `epoll_wait`; in the epoll set as token 0.
        let wakeDescriptor: Int32
        let waitSet: Int32

        init() throws(HTTPError) {
            let wakeDescriptor = pinpath_eventfd_nonblocking()
            guard wakeDescriptor >= 0 else {
                throw HTTPError(.engineUnavailable, "cannot create the handshake engine's eventfd: \(String(cString: strerror(errno)))")
            }
            let waitSet = epoll_create1(Int32(EPOLL_CLOEXEC))
            guard waitSet >= 0 else {
                let reason = String(cString: strerror(errno))
                close(wakeDescriptor)
                throw HTTPError(.engineUnavailable, "cannot create the handshake engine's epoll set: \(reason)")
            }
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = HandshakeLoop.wakeToken
            guard epoll_ctl(waitSet, EPOLL_CTL_ADD, wakeDescriptor, &event) == 0 else {
                let reason = String(cString: strerror(errno))
                close(wakeDescriptor)
                close(waitSet)
                throw HTTPError(.engineUnavailable, "cannot watch the handshake engine's eventfd: \(reason)")
            }
            self.wakeDescriptor = wakeDescriptor
            self.waitSet = waitSet
            service = ServiceThread(
                inbox: Inbox(),
                wakeup: .owner { [wakeDescriptor] in
                    var one: UInt64 = 1
                    _ = write(wakeDescriptor, &one, 8)
                })
        }

        deinit {
            close(wakeDescriptor)
            close(waitSet)
        }
    }

    private enum State {
        case idle
        case running(Running)
        case stopped
    }

    private let state = Mutex<State>(.idle)
    private let started = Atomic<Int>(0)

    init() {}

    /// How many threads the engine has started: one at most, for the tests that say so.
    var threadsStarted: Int { started.load(ordering: .relaxed) }

    deinit { stop() }

    /// Hands a check to the engine's thread, starting it on first use; the check's completion is called once,
    /// on that thread (or here, when the engine has stopped or cannot start).
    func submit(_ check: HandshakeCheck) {
        let running: Result<Running, HTTPError> = state.withLock { state in
            switch state {
            case .running(let running): return .success(running)
            case .stopped: return .failure(HTTPError(.cancelled, "\(check.plan.label): the session is shutting down"))
            case .idle:
                do throws(HTTPError) {
                    let running = try Running()
                    try Self.start(running)
                    started.add(1, ordering: .relaxed)
                    state = .running(running)
                    return .success(running)
                } catch {
                    return .failure(error)
                }
            }
        }
        switch running {
        case .failure(let error):
            check.complete(.failure(error))
        case .success(let running):
            let accepted = running.service.post { inbox, phase in
                guard phase == .running else { return false }
                inbox.added.append(check)
                return true
            }
            if !accepted { check.complete(.failure(HTTPError(.cancelled, "\(check.plan.label): the session is shutting down"))) }
        }
    }

    /// Hands `check` to the engine and waits for its end, for a task. Cancelling the task cancels the check and
    /// closes its socket.
    func run(_ check: HandshakeCheck) async -> Result<SessionResponse, HTTPError> {
        let result: Result<SessionResponse, HTTPError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                check.completion = { result in
                    SanitizerEdge.release(check)  // what the engine's thread wrote, for the task
                    continuation.resume(returning: result)
                }
                submit(check)
            }
        } onCancel: {
            cancel(check)
        }
        SanitizerEdge.acquire(check)
        return result
    }

    /// Stops a check: it completes with ``HTTPError/Code/cancelled`` and closes its socket, unless it has ended.
    func cancel(_ check: HandshakeCheck) {
        check.cancelled.store(true, ordering: .releasing)
        let running: Running? = state.withLock { state in
            if case .running(let running) = state { return running }
            return nil
        }
        running?.service.post { inbox, _ in
            inbox.cancelled.append(check)
            return true
        }
    }

    /// Completes every check in flight with ``HTTPError/Code/cancelled``, ends the thread and waits for it (unless
    /// called on it); later checks fail at once. Idempotent.
    func stop() {
        let running: Running? = state.withLock { state in
            defer { state = .stopped }
            if case .running(let running) = state { return running }
            return nil
        }
        running?.service.stop()
    }

    private static func start(_ running: Running) throws(HTTPError) {
        do {
            try running.service.start(name: "pinpath-checks") { _ in HandshakeLoop(running).run() }
        } catch {
            throw HTTPError(.engineUnavailable, "cannot start the handshake engine's thread: \(error)")
        }
    }
}
