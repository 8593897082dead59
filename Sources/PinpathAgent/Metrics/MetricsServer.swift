import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves `/metrics` (Prometheus text or OpenMetrics, by `Accept`), `/healthz` and `/readyz` over HTTP/1.1 on
/// one NIO event loop thread of its own, so a scrape never runs on the agent's actor or a probe's thread.
///
/// Each connection gets one request and is closed after the answer; request bodies are refused (413), other
/// paths are 404, other methods 405. ``MetricsConnectionSlots`` shares the connections out: a request must be
/// complete 5 s after the connection was accepted, every connection is closed after 30 s, at most 32 are open and
/// 8 from one peer, and a connection that keeps the server waiting gives its slot up to a newcomer, so that a
/// scraper is answered whatever other clients hold. NIO's decoder (llhttp) parses the requests and bounds their
/// headers (80 KiB).
final class MetricsServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let address: MetricsListenAddress

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel, address: MetricsListenAddress) {
        self.group = group
        self.channel = channel
        self.address = address
    }

    /// Binds `address` and starts serving `store`'s metrics.
    /// - Throws: ``StartError`` naming the address and the system's reason (`Address already in use`).
    static func start(_ address: MetricsListenAddress, store: MetricsStore) async throws(StartError) -> MetricsServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let slots = MetricsConnectionSlots()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 64)
            .childChannelInitializer { channel in
                // A client cannot hold the agent's descriptors or rendered bodies, nor keep a scraper out.
                MetricsConnectionSlots.peer(of: channel).flatMap { peer in
                    guard slots.admit(channel, peer: peer) else { return channel.close() }
                    return channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: true)
                        try pipeline.addHandler(MetricsHTTPHandler(store: store, slots: slots))
                    }
                }
            }
        do {
            let channel: any Channel
            switch address {
            case .tcp(let host, let port):
                channel = try await bootstrap.bind(host: host, port: port).get()
            case .unix(let path):
                // An old socket file (a previous run that was killed) is replaced; any other file is refused by NIO.
                channel = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
            }
            return MetricsServer(group: group, channel: channel, address: address)
        } catch {
            try? await group.shutdownGracefully()
            let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            throw StartError(description: "cannot listen for metrics on \(address) (metrics.listen): \(reason)")
        }
    }

    /// Stops listening, closes the connections and joins the event loop's thread; removes a Unix socket file.
    func close() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
        if case .unix(let path) = address {
            var status = stat()
            if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        }
    }

    /// Why the server could not start, in one sentence.
    struct StartError: Error, CustomStringConvertible {
        let description: String
    }
}

/// Answers one request per connection from the store's snapshot; runs on the connection's event loop.
final class MetricsHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let store: MetricsStore
    private let slots: MetricsConnectionSlots
    private var request: HTTPRequestHead?
    private var answered = false
    /// The rest of a `/metrics` body being written, and whether ``writeBody(_:)`` is running (a flush can report
    /// the channel writable again from inside it).
    private var body: MetricsExposition.Body?
    private var writingBody = false

    init(store: MetricsStore, slots: MetricsConnectionSlots) {
        self.store = store
        self.slots = slots
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            // A body is refused before it is read: nothing here takes one, and reading it would be unbounded work.
            let length = head.headers.first(name: "content-length").flatMap { Int($0) } ?? 0
            if length > 0 || head.headers.contains(name: "transfer-encoding") {
                slots.requestReceived(context.channel)
                respond(context, status: .payloadTooLarge, body: "a request body is not accepted here\n", head: head)
            } else {
                request = head
            }
        case .body:
            break
        case .end:
            guard let head = request else { return }
            slots.requestReceived(context.channel)
            answer(head, context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if body != nil { writeBody(context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        body = nil  // the client left: the snapshot goes now, not when the handler does
        context.fireChannelInactive()
    }

    private func answer(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        guard head.method == .GET || head.method == .HEAD else {
            var headers = HTTPHeaders()
            headers.add(name: "Allow", value: "GET, HEAD")
            respond(context, status: .methodNotAllowed, body: "only GET and HEAD are served\n", head: head, headers: headers)
            return
        }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        switch path {
        case "/metrics":
            let format = MetricsExposition.Format(accept: head.headers[canonicalForm: "accept"].joined(separator: ","))
            answered = true
            // No Content-Length: the body is written as it is rendered (chunked, or up to the close for HTTP/1.0).
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: format.contentType)
            headers.add(name: "Connection", value: "close")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil)
            if head.method != .HEAD { body = MetricsExposition.Body(store.snapshot().snapshot, format: format) }
            writeBody(context)
        case "/healthz":
            respond(context, status: .ok, body: "ok\n", head: head)
        case "/readyz":
            if store.isReady {
                respond(context, status: .ok, body: "ready\n", head: head)
            } else {
                respond(
                    context, status: .serviceUnavailable,
                    body: "not ready: waiting for the first path snapshot or a first result of every endpoint\n", head: head)
            }
        default:
            respond(context, status: .notFound, body: "not found; try /metrics, /healthz or /readyz\n", head: head)
        }
    }

    /// Writes pieces of the `/metrics` body while the channel takes them, then ends the response and closes the
    /// connection. When the client reads slower than it is rendered, NIO's write buffer fills (64 KiB) and the
    /// rest waits for ``channelWritabilityChanged(context:)``: one piece in memory at a time, whatever the size.
    private func writeBody(_ context: ChannelHandlerContext) {
        guard !writingBody else { return }
        writingBody = true
        defer { writingBody = false }
        slots.answering(context.channel)
        while context.channel.isWritable {
            guard let piece = body?.next() else {
                body = nil
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
                return
            }
            var buffer = context.channel.allocator.buffer(capacity: piece.count)
            buffer.writeBytes(piece)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        // The rest waits for the client to read: until it does, this connection's slot can go to a newcomer.
        slots.awaitingReader(context.channel)
    }

    /// Writes the whole response and closes the connection.
    private func respond(
        _ context: ChannelHandlerContext, status: HTTPResponseStatus, body: String, head: HTTPRequestHead,
        headers extra: HTTPHeaders = HTTPHeaders(), contentType: String = "text/plain; charset=utf-8"
    ) {
        respond(context, status: status, body: Array(body.utf8), head: head, headers: extra, contentType: contentType)
    }

    private func respond(
        _ context: ChannelHandlerContext, status: HTTPResponseStatus, body: [UInt8], head: HTTPRequestHead,
        headers extra: HTTPHeaders = HTTPHeaders(), contentType: String
    ) {
        answered = true
        var buffer = context.channel.allocator.buffer(capacity: body.count)
        buffer.writeBytes(body)
        var headers = extra
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: String(buffer.readableBytes))
        headers.add(name: "Connection", value: "close")
        let response = HTTPResponseHead(version: head.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        if head.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil) }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
