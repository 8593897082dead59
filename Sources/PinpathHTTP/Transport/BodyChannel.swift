import Synchronization

/// The buffer a streamed transfer shares with its consumer (``ResponseBodyStream``): the write callback
/// appends libcurl's bytes (their one copy); the consumer takes the whole buffer at once, or, when it waits, the
/// engine hands it over once per turn (``flush()``): one wake-up per turn rather than one per TLS record. Past
/// ``limit`` buffered bytes the write callback refuses more, so that libcurl pauses the transfer, and the
/// consumer's next take asks the engine to resume it. Two arrays take turns: the chunk handed out last becomes
/// the next buffer once the consumer has dropped it, so that a long body does not fault in fresh memory per chunk.
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
        /// The chunk handed out last (shared with the consumer): the next buffer, in place if the consumer dropped it.
        var lent: [UInt8] = []
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
        /// ``wait(_:)`` or ``flush()`` gave bytes from a paused transfer: the consumer must resume it
        /// (``takeResumeOwed()``).
        var resumeOwed = false

        /// The buffer as the consumer's chunk; the previous chunk's storage becomes the buffer.
        mutating func handOver() -> [UInt8] {
            var chunk = lent
            lent = []
            // In place when the consumer has dropped its copy; otherwise a new array of the same capacity.
            chunk.removeAll(keepingCapacity: true)
            swap(&chunk, &buffer)
            lent = chunk
            delivered += Int64(chunk.count)
            return chunk
        }
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
        state.withLock { state in
            if state.cancelledByConsumer || state.cancelledTask { return true }  // dropped: the engine is ending the transfer
            if state.buffer.count >= limit {
                state.paused = true
                return false
            }
            if state.buffer.capacity == 0 { state.buffer.reserveCapacity(max(initialCapacity, bytes.count)) }
            state.buffer.append(contentsOf: bytes)
            return true
        }
    }

    /// From the engine thread after each turn of libcurl: a waiting consumer gets what the turn wrote, in one chunk.
    func flush() {
        let handOff: (CheckedContinuation<Result<[UInt8]?, HTTPError>, Never>, [UInt8])? = state.withLock { state in
            guard let waiting = state.waiting, !state.buffer.isEmpty else { return nil }
            state.waiting = nil
            state.resumeOwed = state.paused
            state.paused = false
            return (waiting, state.handOver())
        }
        if let (continuation, chunk) = handOff { continuation.resume(returning: .success(chunk)) }
    }

    /// From the engine thread, once, when the transfer ends.
    func finish(_ end: Result<Void, HTTPError>) {
        flush()
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
                let resume = state.paused
                state.paused = false
                return .bytes(state.handOver(), resume: resume)
            }
            guard state.end != nil || state.cancelledByConsumer || state.cancelledTask else { return .pending }
            state.lent = []
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
                state.resumeOwed = state.paused
                state.paused = false
                return .success(state.handOver())
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
            state.lent = []
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
            state.lent = []
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
