import Glibc
import PinpathSupport

/// The one exchange of a `tcp://` check (``TCPExchange``) on the socket libcurl connected: libcurl has no
/// protocol for "send these bytes, read an answer", so it runs here, with `poll` bounded by the request's
/// deadline, on a thread of its own (it blocks, and must not block the engine's loop or the task pool).
enum TCPSocketExchange {
    /// Sends, then reads; closes `socket` in every case.
    /// - Returns: what was read (possibly empty: the server closed without a word), as text.
    /// - Throws: ``HTTPError`` `timedOut` when nothing arrives before the deadline (and `readUntil` is not
    ///   met), `protocolError` when the socket fails.
    static func run(
        socket: Int32, exchange: TCPExchange, deadline: ContinuousClock.Instant, label: String
    ) async throws(HTTPError) -> String? {
        let result: Result<String?, HTTPError> = await withCheckedContinuation { continuation in
            do {
                _ = try DedicatedThread(name: "pinpath-tcp") {
                    let result = Result { () throws(HTTPError) in try exchangeBlocking(socket, exchange, deadline, label) }
                    close(socket)
                    continuation.resume(returning: result)
                }
                .detach()
            } catch {
                close(socket)
                continuation.resume(returning: .failure(HTTPError(.engineUnavailable, "\(label): cannot start a thread: \(error)")))
            }
        }
        return try result.get()
    }

    private static func exchangeBlocking(
        _ socket: Int32, _ exchange: TCPExchange, _ deadline: ContinuousClock.Instant, _ label: String
    ) throws(HTTPError) -> String? {
        let flags = fcntl(socket, F_GETFL)
        _ = fcntl(socket, F_SETFL, flags | O_NONBLOCK)
        if let payload = exchange.send {
            var sent = 0
            while sent < payload.count {
                let written = payload[sent...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written > 0 {
                    sent += written
                } else if written < 0 && (errno == EAGAIN || errno == EINTR) {
                    try wait(socket, for: Int16(POLLOUT), until: deadline, label: label, doing: "sending")
                } else {
                    throw HTTPError(.protocolError, "\(label): sending failed: \(String(cString: strerror(errno)))")
                }
            }
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        reading: while received.count < TCPExchange.maximumBannerSize {
            if let until = exchange.readUntil {
                if String(decoding: received, as: UTF8.self).contains(until) { break reading }
            } else if received.contains(UInt8(ascii: "\n")) {
                break reading
            }
            let count = buffer.withUnsafeMutableBytes {
                recv(socket, $0.baseAddress, min($0.count, TCPExchange.maximumBannerSize - received.count), 0)
            }
            if count > 0 {
                received += buffer[..<count]
            } else if count == 0 {
                break reading  // the server closed: what it said is the banner
            } else if errno == EAGAIN || errno == EINTR {
                do throws(HTTPError) {
                    try wait(socket, for: Int16(POLLIN), until: deadline, label: label, doing: "waiting for the server's answer")
                } catch  where !received.isEmpty {
                    break reading  // what arrived is the banner; the caller's check says what was missing
                }
            } else {
                throw HTTPError(.protocolError, "\(label): reading failed: \(String(cString: strerror(errno)))")
            }
        }
        return received.isEmpty ? nil : String(decoding: received, as: UTF8.self)
    }

    private static func wait(
        _ socket: Int32, for events: Int16, until deadline: ContinuousClock.Instant, label: String, doing: String
    ) throws(HTTPError) {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw HTTPError(.timedOut, "\(label): timed out \(doing)") }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: max(1, left.wholeMilliseconds)))
            if ready > 0 || (ready < 0 && errno != EINTR) { return }
        }
    }
}
