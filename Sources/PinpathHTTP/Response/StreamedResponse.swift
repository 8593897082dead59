/// A response whose body arrives as it is received (``Session/stream(_:options:)``).
public struct StreamedResponse: Sendable {
    /// Status, headers, HTTP version, remote address, TLS details and evaluation, redirect count; its `body` is
    /// empty and its `timings` end at the head. Its `Content-Encoding` field names the coding of
    /// ``body``'s bytes, which are not decoded.
    public var head: SessionResponse
    /// The body, read once.
    public let body: ResponseBodyStream
}

/// A response body as it arrives: chunks of bytes, never empty (several of libcurl's writes coalesced when
/// the consumer is behind).
///
/// The bytes are the ones the server sent, never decoded: a gzip body arrives as gzip (the head's
/// `Content-Encoding` says so), and its `Content-Length` counts them. A consumer that decodes bounds what it
/// decodes to: libcurl decoding for it would hold a whole read's output (16 KiB of gzip is 16 MiB) while the
/// transfer is paused. So a head with a transfer coding other than `chunked` (`Transfer-Encoding: gzip,
/// chunked`), which libcurl 7.88 would decode regardless, is refused before its body.
///
/// Back-pressure: when more than ``RequestOptions/streamBufferSize`` bytes wait for the consumer, the transfer
/// is paused, and resumed when the consumer has taken them, so memory stays flat whatever the body's size.
/// The transfer goes over HTTP/1.1, where a pause holds the server back (TCP's flow control), not HTTP/2,
/// where a paused stream's granted window (32 MiB in libcurl 7.88) would still arrive and wait in memory.
/// The iterator's `next()` returns `nil` at the end of a complete body and throws ``HTTPError`` when the body
/// fails: the connection dropped or closed early (`protocolError`, `transferFailed`), more bytes than the
/// `Content-Length` (`protocolError`), no byte for ``RequestOptions/stallTimeout`` or the body past
/// ``RequestOptions/bodyTimeout`` (`timedOut`), the iterating task cancelled (`cancelled`).
public final class ResponseBodyStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = HTTPError

    let channel: BodyChannel
    private let transfer: Transfer
    private let engine: TransferEngine

    init(channel: BodyChannel, transfer: Transfer, engine: TransferEngine) {
        self.channel = channel
        self.transfer = transfer
        self.engine = engine
    }

    /// A stream dropped before its end ends its transfer (and closes the connection).
    deinit {
        if !channel.isOver { cancel() }
    }

    /// Ends the transfer now, closing its connection; the iterator then returns `nil`.
    public func cancel() {
        channel.cancelByConsumer()
        engine.cancel(transfer)
    }

    /// Bytes of body delivered to the consumer so far.
    public var receivedBytes: Int64 { channel.delivered }

    /// Reads the body; iterate once.
    public func makeAsyncIterator() -> Iterator { Iterator(stream: self) }

    /// Reads the body's chunks.
    public struct Iterator: AsyncIteratorProtocol {
        // Holds the stream: dropping the stream while iterating does not end the transfer.
        let stream: ResponseBodyStream

        /// The next chunk, `nil` at the end of the body.
        /// - Throws: ``HTTPError`` as ``ResponseBodyStream`` describes.
        public mutating func next(isolation actor: isolated (any Actor)? = #isolation) async throws(HTTPError) -> [UInt8]? {
            let stream = self.stream
            switch stream.channel.take() {
            case .bytes(let chunk, let resume):
                if resume { stream.engine.resume(stream.transfer) }
                return chunk
            case .end: return nil
            case .failure(let error): throw error
            case .pending: break
            }
            let result = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in stream.channel.wait(continuation) }
            } onCancel: {
                stream.channel.cancelTask()
                stream.engine.cancel(stream.transfer)
            }
            let chunk = try result.get()
            if chunk != nil, stream.channel.takeResumeOwed() { stream.engine.resume(stream.transfer) }
            return chunk
        }

        /// The next chunk, `nil` at the end of the body.
        /// - Throws: ``HTTPError`` as ``ResponseBodyStream`` describes.
        public mutating func next() async throws(HTTPError) -> [UInt8]? {
            try await next(isolation: nil)
        }
    }
}
