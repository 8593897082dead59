import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import PinpathSecurity
import PinpathSupport

/// Serves `/metrics` (Prometheus text or OpenMetrics, by `Accept`), `/healthz`, `/readyz` and `/probe` over
/// HTTP/1.1 on one NIO event loop thread of its own, so a scrape never runs on the agent's actor or a probe's
/// thread; a `/probe` probe runs in a task of its own and its answer is written back on the loop.
///
/// Each connection gets one request and is closed after the answer; request bodies are refused (413), other
/// paths are 404, other methods 405. ``MetricsConnectionSlots`` shares the connections out: a request must be
/// complete 5 s after the connection was accepted, every connection is closed after 30 s (a `/probe` connection
/// 30 s after its probe returned: its probe's own timeout bounds the wait), at most 32 are open and 8 from one
/// peer (a local user, an IPv4 address, an IPv6 /64), and a newcomer takes the slot of the connection
/// whose client has kept the server waiting longest (its request, or the answer it does not take), so that a
/// scraper is answered whatever other clients hold. NIO's decoder (llhttp) parses the requests and bounds their
/// headers (80 KiB).
final class MetricsServer: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let address: MetricsListenAddress
    private let probeRoute: ProbeRoute?
    private let gate: ListenerGate

    private init(
        group: MultiThreadedEventLoopGroup, channel: any Channel, address: MetricsListenAddress, probeRoute: ProbeRoute?,
        gate: ListenerGate
    ) {
        self.group = group
        self.channel = channel
        self.address = address
        self.probeRoute = probeRoute
        self.gate = gate
    }

    /// Binds `address` and starts serving `store`'s metrics, and `/probe` through `probe` when given, to the
    /// clients `access` lets in.
    /// - Parameters:
    ///   - probe: the agent's target probe; nil: `/probe` is not found (404).
    ///   - probeMaxInFlight: how many `/probe` probes may run at once (`metrics.probe_max_in_flight`).
    ///   - access: who may use which route (`metrics.tls`, `metrics.basic_auth`, `metrics.probe_unauthenticated`).
    ///   - status: what `/api/v1/status` shows; nil: that route is not found (404).
    /// - Throws: ``StartError`` naming the address and the system's reason (`Address already in use`).
    static func start(
        _ address: MetricsListenAddress, store: MetricsStore, probe: ProbeRoute.Probe? = nil,
        probeMaxInFlight: Int = AgentConfiguration.defaultProbeMaxInFlight, access: ListenerAccess = ListenerAccess(),
        slotLimits: MetricsConnectionSlots.Limits = MetricsConnectionSlots.Limits(), status: StatusStore? = nil
    ) async throws(StartError) -> MetricsServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let slots = MetricsConnectionSlots(slotLimits)
        let probeRoute = probe.map { ProbeRoute(probe: $0, maxInFlight: probeMaxInFlight, metrics: store.probeRoute) }
        let gate = ListenerGate(access, store: store)
        let statusAnswers = StatusAnswerCache()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 64)
            // A client's end of file is the handler's to act on: a client that shuts its side after the request is
            // answered like any other, and one that has its answer closes the connection by closing its side.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { channel in
                // A client cannot hold the agent's descriptors or rendered bodies, nor keep a scraper out.
                slots.peer(of: channel).flatMap { peer in
                    slots.admit(channel, peer: peer)
                    return channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        // The context of the configuration running now: a reload's new certificate serves the next
                        // connection.
                        if let tls = gate.current.tls {
                            try pipeline.addHandler(ListenerTLSHandler(try TLSServerConnection(tls.context)))
                        }
                        try pipeline.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: true)
                        try pipeline.addHandler(
                            MetricsHTTPHandler(
                                store: store, slots: slots, peer: peer, probeRoute: probeRoute, gate: gate, status: status,
                                statusAnswers: statusAnswers))
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
            return MetricsServer(group: group, channel: channel, address: address, probeRoute: probeRoute, gate: gate)
        } catch {
            try? await group.shutdownGracefully()
            await gate.close()
            let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            throw StartError(description: "cannot listen for metrics on \(address) (metrics.listen): \(reason)")
        }
    }

    /// Stops listening, closes the connections and joins the event loop's thread; removes a Unix socket file.
    func close() async {
        try? await channel.close()
        // Probes still running are cancelled and awaited: their answers are written on the loop, which must outlive them.
        await probeRoute?.close()
        try? await group.shutdownGracefully()
        await gate.close()
        if case .unix(let path) = address {
            var status = stat()
            if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        }
    }

    /// The address this listener is bound to: a reload's pending `metrics.listen` is not it until a restart.
    var boundAddress: MetricsListenAddress { address }

    /// Takes a reloaded configuration's access (`metrics.tls`, `metrics.basic_auth`, `metrics.probe_unauthenticated`,
    /// SIGHUP) when its `metrics.listen` is the address bound: the next request is checked against it. A reload that
    /// changes or removes `metrics.listen` waits for a restart, and so does its access: rules written for another
    /// address (loopback, or no listener at all) would open this one. Whether the listener is local-only is always
    /// judged from the bound address.
    /// - Returns: whether the access was taken.
    @discardableResult
    func replaceAccess(with access: ListenerAccess, listen: MetricsListenAddress?) -> Bool {
        guard listen == address else { return false }
        var access = access
        access.isLocalOnly = ListenerAccess.isLocalOnly(address)
        gate.replace(with: access)
        return true
    }

    /// Why the server could not start, in one sentence.
    struct StartError: Error, CustomStringConvertible {
        let description: String
    }
}

/// Answers one request per connection from the store's snapshot; runs on the connection's event loop.
///
/// Every write is flushed at once (a whole answer, head, body and end, with one flush: one system call); the kernel
/// taking it whole is the client taking its answer, which ``MetricsConnectionSlots`` sees as progress. Between writes the connection waits on its client and its slot can
/// be taken, however the answer stands (pieces left to render, the last one queued, only the end of the response
/// left): a client that asks and does not read holds nothing a scraper needs.
///
/// After the end of the response the listener shuts its side (the client reads an end of file after the answer)
/// and closes when the client closes its own, so the connection is never closed with bytes the client has not
/// received: such a socket would outlive its slot in the kernel, holding the unsent answer and probing the
/// client's window for minutes. A client that never closes keeps its slot until it is taken or its lifetime ends,
/// which reset the connection.
final class MetricsHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let store: MetricsStore
    /// What `/api/v1/status` renders; nil: no such route.
    private let status: StatusStore?
    /// The document the requests of the last second share.
    private let statusAnswers: StatusAnswerCache
    private let slots: MetricsConnectionSlots
    /// Who the client is, as the slots count it (and the gate queues its credential checks).
    private let peer: MetricsSlotTable.Peer
    private let probeRoute: ProbeRoute?
    /// The `/probe` probe running for this connection: cancelled when its client goes.
    private var probeTask: Task<Void, Never>?
    private let gate: ListenerGate
    private var request: HTTPRequestHead?
    private var answered = false
    /// The rest of a `/metrics` body being written, and whether ``writeBody(_:)`` is running (a flush can report
    /// the channel writable again from inside it).
    private var body: MetricsExposition.Body?
    private var writingBody = false
    /// Whether the end of the response was written (the listener's side shuts once the kernel has taken it).
    private var ended = false
    /// Whether the client shut its side.
    private var inputClosed = false

    init(
        store: MetricsStore, slots: MetricsConnectionSlots, peer: MetricsSlotTable.Peer, probeRoute: ProbeRoute?,
        gate: ListenerGate, status: StatusStore? = nil, statusAnswers: StatusAnswerCache = StatusAnswerCache()
    ) {
        self.store = store
        self.status = status
        self.statusAnswers = statusAnswers
        self.slots = slots
        self.peer = peer
        self.probeRoute = probeRoute
        self.gate = gate
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Past the first request (a second one pipelined behind it, a body): read and dropped, never answered.
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
            admit(head, context)
        }
    }

    /// Runs the listener's gate (``ListenerAccess``) before any route: 401 with a challenge for missing or wrong
    /// credentials, 403 for a route this listener refuses, 503 when too many of this peer's credential checks wait. No route runs
    /// for a refused request and the answer carries nothing of it.
    private func admit(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        answered = true  // nothing read from now on is answered, whatever the gate says
        let path = String(head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        // Several Host headers are refused by the HTTP decoder; the first is the one.
        let verdict = gate.decide(
            route: path, host: head.headers.first(name: "host"), authorization: head.headers.first(name: "authorization"),
            peer: peer, on: context.channel)
        verdict.assumeIsolated().whenComplete { result in
            guard context.channel.isActive else { return }
            switch result {
            case .success(.allowed):
                self.answer(head, context)
            case .success(.unauthorized):
                var headers = HTTPHeaders()
                headers.add(name: "WWW-Authenticate", value: ListenerAccess.challenge)
                self.respond(
                    context, status: .unauthorized, body: "credentials required (metrics.basic_auth)\n", head: head, headers: headers)
            case .success(.refused(let reason)):
                self.respond(context, status: .forbidden, body: reason + "\n", head: head)
            case .success(.misdirected(let reason)):
                self.respond(context, status: .misdirectedRequest, body: reason + "\n", head: head)
            case .success(.busy), .failure:
                var headers = HTTPHeaders()
                headers.add(name: "Retry-After", value: "1")
                self.respond(
                    context, status: .serviceUnavailable, body: "too many credential checks at once; retry\n", head: head, headers: headers)
            }
        }
    }

    /// A request that cannot be parsed (also one pipelined behind the first) or a broken connection: given up,
    /// with whatever of the answer the client has not taken.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        MetricsConnectionSlots.reset(context.channel)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(.inputClosed) = event as? ChannelEvent {
            inputClosed = true
            // A client whose side ends while its probe runs has gone, as Go's server (blackbox_exporter's) takes
            // it: the probe is cancelled (its in-flight slot is free when it returns) rather than left to run.
            if let probeTask {
                probeTask.cancel()
                self.probeTask = nil
                context.close(promise: nil)
            } else if !answered || outputClosed {
                // Nothing was asked (nothing more can be), or the answer is out and the client left: done. A client
                // that shut its side after asking for anything else still gets its answer.
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if body != nil { writeBody(context) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        body = nil  // the client left: the snapshot goes now, not when the handler does
        probeTask?.cancel()  // and its probe stops: its in-flight slot is free when the probe returns
        probeTask = nil
        context.fireChannelInactive()
    }

    private func answer(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        guard head.method == .GET || head.method == .HEAD else {
            var headers = HTTPHeaders()
            headers.add(name: "Allow", value: "GET, HEAD")
            respond(context, status: .methodNotAllowed, body: "only GET and HEAD are served\n", head: head, headers: headers)
            return
        }
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first ?? ""
        switch path {
        case "/probe" where probeRoute != nil:
            answerProbe(head, query: parts.count > 1 ? parts[1] : "", context)
        case "/metrics":
            let format = MetricsExposition.Format(accept: head.headers[canonicalForm: "accept"].joined(separator: ","))
            answered = true
            // No Content-Length: the body is written as it is rendered (chunked, or up to the close for HTTP/1.0).
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: format.contentType)
            headers.add(name: "Connection", value: "close")
            send(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers)), context)
            if head.method != .HEAD { body = MetricsExposition.Body(store.snapshot().snapshot, format: format) }
            writeBody(context)
        case "/api/v1/status" where status != nil:
            answerStatus(head, context)
        case let path where StatusPage.asset(at: path) != nil:
            answerStatusPage(path, head: head, context)
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
            respond(
                context, status: .notFound, body: "not found; try /metrics, /healthz, /readyz, /api/v1/status or the status page /\n",
                head: head)
        }
    }

    /// `/api/v1/status`: the status document (``StatusDocument``), rendered here on the listener's thread from a
    /// snapshot copied under the store's short lock, at most once a second (less often when it is slow to render):
    /// the requests that follow share it (``StatusAnswerCache``).
    private func answerStatus(_ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        guard let status else { return }
        // HEAD too: its Content-Length is the document's, as GET's would be.
        let allocator = context.channel.allocator
        let body = statusAnswers.body {
            let bytes = StatusDocument.render(status.snapshot())
            var buffer = allocator.buffer(capacity: bytes.count)
            buffer.writeBytes(bytes)
            return buffer
        }
        respond(context, status: .ok, bytes: body, head: head, headers: HTTPHeaders(StatusDocument.headers))
    }

    /// A file of the status page (`/`, `/status.css`, `/status.js`) with the page's headers (``StatusPage/headers``).
    private func answerStatusPage(_ path: Substring, head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        guard let asset = StatusPage.asset(at: path) else { return }
        var headers = HTTPHeaders(StatusPage.headers.map { ($0.name, $0.value) })
        headers.add(name: "Content-Type", value: asset.contentType)
        var buffer = context.channel.allocator.buffer(capacity: asset.bytes.count)
        buffer.writeBytes(asset.bytes)
        respond(context, status: .ok, bytes: buffer, head: head, headers: headers)
    }

    /// `/probe?target=…&module=…`: a malformed request is answered at once (400), one above the in-flight limit
    /// too (503 with `Retry-After`); otherwise the agent probes in a task and the answer is written when it returns.
    private func answerProbe(_ head: HTTPRequestHead, query: Substring, _ context: ChannelHandlerContext) {
        guard let route = probeRoute else { return }
        let request: TargetProbeRequest
        do {
            let parsed = try ProbeQuery(parsing: query)
            let deadline = try ScrapeDeadline.deadline(headers: head.headers[ScrapeDeadline.header])
            request = TargetProbeRequest(module: parsed.module, target: parsed.target, deadline: deadline, debug: parsed.debug)
        } catch {
            route.metrics.badRequest()
            respond(context, status: .badRequest, body: "\(error)\n", head: head)
            return
        }
        do {
            try route.admit(peer)
        } catch {
            var headers = HTTPHeaders()
            headers.add(name: "Retry-After", value: "1")
            let reason =
                switch error {
                case .limit: "\(route.maxInFlight) probes are running (metrics.probe_max_in_flight); retry in a second\n"
                case .peerShare:
                    "this client runs \(route.maxInFlightPerPeer) probes, its share of metrics.probe_max_in_flight (\(route.maxInFlight)); retry in a second\n"
                }
            respond(context, status: .serviceUnavailable, body: reason, head: head, headers: headers)
            return
        }
        answered = true  // anything pipelined behind it is dropped, as for every request
        let promise = context.eventLoop.makePromise(of: TargetProbeExposition.Answer.self)
        // Read on the probe's task: the result is freed there, not on this thread.
        guard let task = route.start(request, peer: peer, done: { promise.succeed(TargetProbeExposition.Answer($0, seconds: $1)) })
        else {
            // The listener is closing.
            route.release(peer)
            return context.close(promise: nil)
        }
        // The connection now waits on the probe, not on its client: the in-flight limit bounds it, not the slots,
        // until the answer is ready.
        slots.handOver(context.channel)
        probeTask = task
        promise.futureResult.assumeIsolated().whenSuccess { answer in
            self.probeTask = nil
            guard context.channel.isActive else { return }
            // From here the connection waits on its client again (to take the answer and go): it holds a slot.
            self.slots.reclaim(context.channel)
            guard context.channel.isActive else { return }  // its slot went to a newcomer's
            self.writeProbeAnswer(answer, debug: request.debug, head: head, context)
        }
    }

    private func writeProbeAnswer(
        _ answer: TargetProbeExposition.Answer, debug: Bool, head: HTTPRequestHead, _ context: ChannelHandlerContext
    ) {
        switch answer {
        case .probed(let samples, let log):
            let exposition = TargetProbeExposition.bytes(samples)
            if debug {
                let text = TargetProbeExposition.debugText(log: log, exposition: String(decoding: exposition, as: UTF8.self))
                respond(context, status: .ok, body: text, head: head)
            } else {
                var buffer = context.channel.allocator.buffer(capacity: exposition.count)
                buffer.writeBytes(exposition)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: MetricsExposition.Format.prometheus.contentType)
                respond(context, status: .ok, bytes: buffer, head: head, headers: headers)
            }
        case .refused(let reason):
            // The agent's reasons quote the target: one line, whatever it holds.
            respond(context, status: .forbidden, body: UntrustedText.escaped(reason, limit: 1024) + "\n", head: head)
        case .invalid(let reason):
            respond(context, status: .badRequest, body: UntrustedText.escaped(reason, limit: 1024) + "\n", head: head)
        case .unavailable(let reason):
            var headers = HTTPHeaders()
            headers.add(name: "Retry-After", value: "1")
            respond(context, status: .serviceUnavailable, body: reason + "\n", head: head, headers: headers)
        }
    }

    /// Writes pieces of the `/metrics` body while the channel takes them, then ends the response. When the client
    /// reads slower than it is rendered, NIO's write buffer fills (64 KiB) and the rest waits for
    /// ``channelWritabilityChanged(context:)``: one piece in memory at a time, whatever the size.
    private func writeBody(_ context: ChannelHandlerContext) {
        guard !writingBody else { return }
        writingBody = true
        defer { writingBody = false }
        while context.channel.isWritable, body != nil {
            guard let piece = body?.next() else {
                body = nil
                end(context)
                return
            }
            var buffer = context.channel.allocator.buffer(capacity: piece.count)
            buffer.writeBytes(piece)
            send(.body(.byteBuffer(buffer)), context)
        }
    }

    /// Writes `part`, and flushes it with what was written before it unless `flush` is false (a part the next
    /// one flushes). When the kernel has taken it whole the client made progress; when that was the end of the
    /// response, the listener's side shuts.
    private func send(_ part: HTTPServerResponsePart, _ context: ChannelHandlerContext, flush: Bool = true) {
        let isEnd: Bool
        if case .end = part { isEnd = true } else { isEnd = false }
        let written = flush ? context.writeAndFlush(wrapOutboundOut(part)) : context.write(wrapOutboundOut(part))
        // Completed on this event loop, where the handler and its context live.
        written.assumeIsolated().whenComplete { result in
            guard case .success = result else { return context.close(promise: nil) }
            self.slots.progressed(context.channel)
            if isEnd { self.shutOutput(context) }
        }
    }

    /// Whether the listener's side is shut (the whole response is with the kernel).
    private var outputClosed = false

    private func shutOutput(_ context: ChannelHandlerContext) {
        outputClosed = true
        // When the client shut its side first, nothing will say it has read the answer: the connection waits for
        // its slot to be taken or its lifetime to end.
        context.close(mode: .output, promise: nil)
    }

    /// Ends the response; the connection closes once the kernel has taken the end.
    private func end(_ context: ChannelHandlerContext) {
        guard !ended else { return }
        ended = true
        send(.end(nil), context)
    }

    /// Writes the whole response as `text/plain` and closes the connection.
    private func respond(
        _ context: ChannelHandlerContext, status: HTTPResponseStatus, body: String, head: HTTPRequestHead,
        headers extra: HTTPHeaders = HTTPHeaders()
    ) {
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        var headers = extra
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        respond(context, status: status, bytes: buffer, head: head, headers: headers)
    }

    /// Writes a whole answer: `headers` (its Content-Type among them), the length, and `body` unless the request is
    /// HEAD (whose Content-Length is GET's), then the end; one flush for all of it, one write to the socket.
    private func respond(
        _ context: ChannelHandlerContext, status: HTTPResponseStatus, bytes body: ByteBuffer, head: HTTPRequestHead,
        headers: HTTPHeaders
    ) {
        answered = true
        var headers = headers
        headers.add(name: "Content-Length", value: String(body.readableBytes))
        headers.add(name: "Connection", value: "close")
        send(.head(HTTPResponseHead(version: head.version, status: status, headers: headers)), context, flush: false)
        if head.method != .HEAD { send(.body(.byteBuffer(body)), context, flush: false) }
        end(context)
    }
}
