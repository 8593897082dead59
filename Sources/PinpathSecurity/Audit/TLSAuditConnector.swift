import PinpathSupport

/// How one audit gets its connection and handshake: ``blockingPool`` (a blocking connect and a `poll`-driven
/// handshake on a thread of pinpath's pool for blocking work, what ``TLSAudit/run(_:options:)`` does), or a
/// `Session`'s handshake engine (PinpathHTTP), where every audit of a batch is a socket on one epoll thread.
/// Either way the handshake is an audit's ``TLSClientHandshake`` (no verifier, an audit's context), its
/// failures worded by ``TLSConnection``, and what it showed judged afterwards by ``TLSAudit``.
package struct TLSAuditConnector: Sendable {
    /// One audit's connection to make.
    package struct Attempt: Sendable {
        /// Where to connect: ``TLSAudit/Options/connectTo``, else the endpoint audited.
        package let dialled: TLSEndpoint
        /// How messages name the target: the endpoint audited (`valid.test:443`).
        package let label: String
        /// The name sent as SNI (none for an IP address).
        package let serverName: String
        /// The audit's context (``TLSClientTerms/Purpose/audit``).
        package let context: TLSClientContext
        /// The end of the TCP connection and the TLS handshake together (``TLSAudit/Options/timeout`` from the
        /// audit's start). Name resolution is not bounded by it.
        package let deadline: ContinuousClock.Instant
    }

    /// What came of an attempt: the address connected to (`127.0.0.1:4433`), once there was a connection, and
    /// the handshake or why there was none.
    package struct Outcome: Sendable {
        package let address: String?
        package let handshake: Result<AuditedHandshake, TLSConnectionError>

        package init(address: String?, handshake: Result<AuditedHandshake, TLSConnectionError>) {
            self.address = address
            self.handshake = handshake
        }
    }

    /// Makes the connection and the handshake. Never throws: a failure is the outcome's.
    package let connect: @Sendable (Attempt) async -> Outcome

    package init(connect: @escaping @Sendable (Attempt) async -> Outcome) {
        self.connect = connect
    }

    /// Each audit on a thread of ``BlockingPool``, blocked in `poll` until its handshake ends: for a program
    /// without a `Session`.
    package static let blockingPool = TLSAuditConnector { attempt in
        await BlockingPool.shared.run { connectBlocking(attempt) }
    }

    /// The attempt on the calling thread, which it blocks until the handshake ends or the deadline passes.
    static func connectBlocking(_ attempt: Attempt) -> Outcome {
        var address: String?
        do throws(TLSConnectionError) {
            let connection = try TLSConnection(connectingTo: attempt.dialled, label: attempt.label, deadline: attempt.deadline)
            address = connection.address
            let handshake = try connection.handshake(
                serverName: attempt.serverName, context: attempt.context, deadline: attempt.deadline)
            return Outcome(address: address, handshake: .success(handshake))
        } catch {
            return Outcome(address: address, handshake: .failure(error))
        }
    }
}
