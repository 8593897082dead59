import NIOCore
import PinpathSecurity

/// TLS for the metrics listener (`metrics.tls`), first in each connection's pipeline: bytes from the client go
/// through the project's own OpenSSL (``TLSServerConnection``, the library that verifies every probe's chain),
/// plaintext goes on to the HTTP handlers, and their answer comes back encrypted.
///
/// A client that fails the handshake (a plain HTTP client, no client certificate when `client_ca` asks for one,
/// a version below `min_version`) gets OpenSSL's alert, if any, and the connection is closed: no hang. Each write's
/// promise is the promise of its encrypted bytes, so the listener's slots see the client's progress as before.
final class ListenerTLSHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let connection: TLSServerConnection
    private var failed = false

    init(_ connection: TLSServerConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        let (plaintext, state) = buffer.withUnsafeReadableBytes { connection.receive($0) }
        writeOutput(context, promise: nil)
        context.flush()
        if !plaintext.isEmpty {
            var decrypted = context.channel.allocator.buffer(capacity: plaintext.count)
            decrypted.writeBytes(plaintext)
            context.fireChannelRead(wrapInboundOut(decrypted))
        }
        switch state {
        case .open:
            break
        case .closedByClient:
            // As a client's end of file: the HTTP handler answers what it was asked and closes.
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        case .failed:
            failed = true
            context.close(promise: nil)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        guard buffer.withUnsafeReadableBytes({ connection.send($0) }) else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        writeOutput(context, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .output {
            connection.shutdown()
            writeOutput(context, promise: nil)
            context.flush()
        }
        context.close(mode: mode, promise: promise)
    }

    /// Passes on what OpenSSL has to send; `promise` completes when the kernel has taken it.
    private func writeOutput(_ context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let bytes = connection.takeOutput()
        guard !bytes.isEmpty else {
            promise?.succeed()
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}
