import Synchronization

/// The buffer a streamed transfer shares with its consumer (``ResponseBodyStream``): the write callback
/// appends libcurl's bytes (their one copy) or hands them straight to a waiting consumer; the consumer takes
/// the whole buffer at once. Past ``limit`` buffered bytes the write callback refuses more, so that libcurl
/// pauses the transfer, and the consumer's next take asks the engine to resume it.
final class BodyChannel: Sendable {
    /// What the consumer gets from one ``take()``.
    enum Take {
        /// Bytes, never empty; `resume` when the transfer was paused for the consumer and must be resumed.
        case bytes([UInt8], resume: Bool)
        /// The body is complete, or the consumer ended it (``cancelByConsumer()``).
        case end
        case failure(HTTPError)
        /// Nothing yet: wait (``wait(_:)``).
        case pending
    }

    private struct State {
        var buffer: [UInt8] = []
        /// The write callback refused bytes (libcurl paused); the consumer's next take resumes the transfer.
        var paused = false
        /// How the transfer ended; read by the consumer once the buffer is empty.
        var end: Result<Void, HTTPError>?
        /// The consumer asked to stop: the end reads as complete.
        var cancelledByConsumer = false
        /// The consumer's task was cancelled while waiting.
        var cancelledTask = false
        var waiting: CheckedContinuation<Result<[UInt8]?, HTTPError>, Never>?
        var delivered: Int64 = 0
        /// ``wait(_:)`` took bytes from a paused transfer: the consumer must resume it (``takeResumeOwed()``).
        var resumeOwed = false
    }

    private let state = Mutex(State())
    /// Bytes buffered before the write callback pauses the transfer.
    let limit: Int
    /// What a first append reserves: the coalesced bytes then rarely move while the buffer grows.
    private let initialCapacity: Int

    init(limit: Int) {
        self.limit = max(1, limit)
        initialCapacity = min(self.limit, 256 << 10)
    }

    /// From the write callback (the engine thread): `false` when the bytes are refused and the transfer must
    /// pause (libcurl keeps them and offers them again once resumed).
    func offer(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var handOff: CheckedContinuation<Result<[UInt8]?, HTTPError>, Never>?
        let accepted = state.withLock { state in
            if state.cancelledByConsumer || state.cancelledTask { return true }  // dropped: the engine is ending the transfer
            if let waiting = state.waiting {
                state.waiting = nil
                state.delivered += Int64(bytes.count)
                handOff = waiting
                return true
            }
            if state.buffer.count >= limit {
                state.paused = true
                return false
            }
            if state.buffer.capacity == 0 { state.buffer.reserveCapacity(max(initialCapacity, bytes.count)) }
            state.buffer.append(contentsOf: bytes)
            return true
        }
        // The consumer was waiting, so the buffer is empty: the bytes go to it directly, copied once.
        handOff?.resume(returning: .success(Array(bytes)))
        return accepted
    }

    /// From the engine thread, once, when the transfer ends.
    func finish(_ end: Result<Void, HTTPError>) {
        let waiting = state.withLock { state in
            if state.end == nil { state.end = end }
            defer { state.waiting = nil }
            return state.waiting.map { ($0, Self.endResult(state)) }
        }
        if let (continuation, result) = waiting { continuation.resume(returning: result) }
    }

    /// The consumer's take: the whole buffer, or how the body ended, or `pending`.
    func take() -> Take {
        state.withLock { state in
            if !state.buffer.isEmpty {
                var chunk: [UInt8] = []
                swap(&chunk, &state.buffer)
                state.delivered += Int64(chunk.count)
                let resume = state.paused
                state.paused = false
                return .bytes(chunk, resume: resume)
            }
            guard state.end != nil || state.cancelledByConsumer || state.cancelledTask else { return .pending }
            switch Self.endResult(state) {
            case .success: return .end
            case .failure(let error): return .failure(error)
            }
        }
    }

    /// Waits for bytes or the end (a ``take()`` returned `pending`): `nil` at the end.
    func wait(_ continuation: CheckedContinuation<Result<[UInt8]?, HTTPError>, Never>) {
        let ready: Result<[UInt8]?, HTTPError>? = state.withLock { state in
            if !state.buffer.isEmpty {  // filled since the take that found nothing
                var chunk: [UInt8] = []
                swap(&chunk, &state.buffer)
                state.delivered += Int64(chunk.count)
                state.resumeOwed = state.paused
                state.paused = false
                return .success(chunk)
            }
            if state.end != nil || state.cancelledByConsumer || state.cancelledTask { return Self.endResult(state) }
            // The body is read once: a second reader waiting at the same time gets an error, not a hang.
            if state.waiting != nil {
                return .failure(HTTPError(.protocolError, "the response body is already being read by another iterator"))
            }
            state.waiting = continuation
            return nil
        }
        if let ready { continuation.resume(returning: ready) }
    }

    /// Whether the bytes ``wait(_:)`` delivered came from a paused transfer, which the consumer must resume.
    func takeResumeOwed() -> Bool {
        state.withLock { state in
            defer { state.resumeOwed = false }
            return state.resumeOwed
        }
    }

    /// The consumer stops reading: the end reads as complete (`nil`), whatever the transfer does next.
    func cancelByConsumer() {
        let waiting = state.withLock { state in
            state.cancelledByConsumer = true
            state.buffer = []
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume(returning: .success(nil))
    }

    /// The consumer's task was cancelled: a waiting or next take fails with `cancelled`.
    func cancelTask() {
        let waiting = state.withLock { state in
            if !state.cancelledByConsumer { state.cancelledTask = true }
            state.buffer = []
            defer { state.waiting = nil }
            return state.waiting.map { ($0, Self.endResult(state)) }
        }
        if let (continuation, result) = waiting { continuation.resume(returning: result) }
    }

    /// Bytes handed to the consumer so far.
    var delivered: Int64 { state.withLock { $0.delivered } }
    /// Whether the transfer's end (or the consumer's) has been recorded.
    var isOver: Bool { state.withLock { $0.end != nil || $0.cancelledByConsumer || $0.cancelledTask } }

    private static func endResult(_ state: State) -> Result<[UInt8]?, HTTPError> {
        if state.cancelledByConsumer { return .success(nil) }
        if state.cancelledTask { return .failure(HTTPError(.cancelled, "the response body: the task reading it was cancelled")) }
        switch state.end {
        case .failure(let error): return .failure(error)
        default: return .success(nil)
        }
    }
}
