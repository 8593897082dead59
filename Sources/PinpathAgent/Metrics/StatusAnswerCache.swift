import NIOCore
import Synchronization

/// The last rendered status document, shared by the `/api/v1/status` requests that follow it for as long as its
/// rendering cost allows.
///
/// Rendering 1,000 endpoints costs the listener's thread about 17 ms and 3.4 MB: without sharing, clients asking
/// at once (or asking and not reading) would each cost that much again, up to the 32 connections the slots allow.
/// Every request within a document's lifetime gets the same bytes (a `ByteBuffer` shares its storage), so the
/// listener holds one document however many clients wait on it. The lifetime is at least a second and at least
/// ten times what the rendering took, so that however slow a document is to render (many endpoints, hostile
/// names), rendering keeps the listener busy a tenth of the time at most and `/healthz` and `/metrics` are answered
/// in between. The document says when it was made (`generated_at`); the page refreshes every 5 s at the most.
final class StatusAnswerCache: Sendable {
    /// The shortest time a rendered document is served again.
    static let minimumLifetime: Duration = .seconds(1)
    /// A document is served again for this many times what it took to render.
    static let lifetimePerRenderingTime = 10

    /// How long a document that took `renderingTime` to render is served again.
    static func lifetime(renderingTime: Duration) -> Duration {
        max(minimumLifetime, renderingTime * lifetimePerRenderingTime)
    }

    private let last = Mutex<(at: ContinuousClock.Instant, lifetime: Duration, body: ByteBuffer)?>(nil)

    /// The document rendered within its lifetime, or `render`'s, timed and kept for the requests that follow.
    func body(now: ContinuousClock.Instant = .now, render: () -> ByteBuffer) -> ByteBuffer {
        if let cached = last.withLock({ $0 }), now - cached.at < cached.lifetime, now >= cached.at { return cached.body }
        let started = ContinuousClock.now
        let body = render()
        let renderingTime = ContinuousClock.now - started
        last.withLock { $0 = (now, Self.lifetime(renderingTime: renderingTime), body) }
        return body
    }
}
