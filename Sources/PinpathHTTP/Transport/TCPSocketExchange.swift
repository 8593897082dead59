import CCurl
import Glibc
import Synchronization

/// The one exchange of a `tcp://` check (``TCPExchange``) on a connected socket: send, then read an answer. It
/// never blocks: whoever drives it calls ``advance(now:)`` when the socket is ready for what it ``awaited`` or its
/// deadline has passed. The handshake engine (``HandshakeCheck``) drives it for a direct check; the libcurl engine
/// (``TransferEngine``) for one through a proxy, between libcurl's work, its `curl_multi_poll` waiting for the
/// socket beside libcurl's own. No exchange needs a thread of its own.
final class TCPSocketExchange {
    let socket: Int32
    let deadline: ContinuousClock.Instant
    let cancellation: Cancellation
    private let exchange: TCPExchange
    private let label: String
    private var completion: ((Result<String?, HTTPError>) -> Void)?
    private var sent = 0
    private var received: [UInt8] = []
    /// What the socket must be ready for before the exchange can go on (`CURL_WAIT_POLLOUT` or `_POLLIN`).
    private(set) var awaited = Int16(CURL_WAIT_POLLOUT)

    /// Takes `socket`, which the exchange closes in every case.
    /// - Parameter completion: called once, on the engine thread, with what was read (possibly `nil`: the server
    ///   closed without a word), or ``HTTPError`` `timedOut` when nothing arrives before the deadline (and
    ///   `readUntil` is not met), `protocolError` when the socket fails, `cancelled` when the engine stops.
    init(
        socket: Int32, exchange: TCPExchange, deadline: ContinuousClock.Instant, label: String,
        cancellation: Cancellation = Cancellation(), completion: @escaping (Result<String?, HTTPError>) -> Void
    ) {
        self.socket = socket
        self.cancellation = cancellation
        self.exchange = exchange
        self.deadline = deadline
        self.label = label
        self.completion = completion
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        // An exchange dropped unfinished (the engine gave up its loop) still answers its caller.
        finish(.failure(HTTPError(.cancelled, "\(label): the session is shutting down")))
    }

    /// Whether the exchange waits for the socket to be writable (else readable).
    var awaitsWritable: Bool { awaited == Int16(CURL_WAIT_POLLOUT) }

    /// Goes on as far as the socket allows without blocking, and past the deadline only with what it has.
    /// - Returns: whether the exchange is over (its completion was called and its socket closed).
    func advance(now: ContinuousClock.Instant) -> Bool {
        if cancellation.isRequested {
            finish(.failure(HTTPError(.cancelled, "\(label): cancelled")))
            return true
        }
        do throws(HTTPError) {
            guard let banner = try step(now: now) else { return false }
            finish(.success(banner))
        } catch {
            finish(.failure(error))
        }
        return true
    }

    /// Whether the task awaiting the exchange was cancelled: set from any thread, read by the engine's.
    final class Cancellation: Sendable {
        private let requested = Atomic<Bool>(false)

        var isRequested: Bool { requested.load(ordering: .acquiring) }

        func request() { requested.store(true, ordering: .releasing) }
    }

    /// Ends the exchange with `result` unless it has ended.
    func finish(_ result: Result<String?, HTTPError>) {
        guard let completion else { return }
        self.completion = nil
        close(socket)
        completion(result)
    }

    /// Sends, then reads.
    /// - Returns: `nil` to wait for ``awaited``, or the answer read (itself `nil` when nothing was).
    private func step(now: ContinuousClock.Instant) throws(HTTPError) -> String?? {
        if let payload = exchange.send {
            while sent < payload.count {
                let written = payload[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written > 0 {
                    sent += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else if written < 0 && errno == EAGAIN {
                    guard now < deadline else { throw HTTPError(.timedOut, "\(label): timed out sending") }
                    awaited = Int16(CURL_WAIT_POLLOUT)
                    return .none
                } else {
                    throw HTTPError(.protocolError, "\(label): sending failed: \(String(cString: strerror(errno)))")
                }
            }
        }
        var chunk = [UInt8](repeating: 0, count: 1024)
        reading: while received.count < TCPExchange.maximumBannerSize {
            if let until = exchange.readUntil {
                if String(decoding: received, as: UTF8.self).contains(until) { break reading }
            } else if received.contains(UInt8(ascii: "\n")) {
                break reading
            }
            let count = chunk.withUnsafeMutableBytes {
                recv(socket, $0.baseAddress, min($0.count, TCPExchange.maximumBannerSize - received.count), 0)
            }
            if count > 0 {
                received += chunk[..<count]
            } else if count == 0 {
                break reading  // the server closed: what it said is the banner
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN {
                guard now < deadline else {
                    // What arrived is the banner; the caller's check says what was missing.
                    if !received.isEmpty { break reading }
                    throw HTTPError(.timedOut, "\(label): timed out waiting for the server's answer")
                }
                awaited = Int16(CURL_WAIT_POLLIN)
                return .none
            } else {
                throw HTTPError(.protocolError, "\(label): reading failed: \(String(cString: strerror(errno)))")
            }
        }
        return .some(received.isEmpty ? nil : String(decoding: received, as: UTF8.self))
    }
}
