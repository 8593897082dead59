import Glibc
import Synchronization

/// The monitor's answers to "is this address routable now, and through what?", asked from any thread
/// without waiting for the monitor thread: the kernel's route look-up runs on the caller's thread, on a
/// socket the monitor opened in its network namespace, and is judged against the links and addresses the
/// monitor last read.
///
/// Answers are kept per generation of the kernel's state. The monitor thread starts a new generation each
/// time it reads netlink messages, resyncs, or finds on a settle recheck that the routes moved; that
/// forgets every kept answer. Two rules keep an answer from outliving the state it was read from:
/// - it is kept only under the generation read before the look-up, so one asked while a change arrived is
///   never kept past it;
/// - it is kept only once the kernel has settled (``ReachabilityMonitor/settlingTime`` after the generation
///   began), because the kernel announces some changes a moment before route look-ups see them (a deleted
///   route is announced, then unlinked).
///
/// Between the kernel's change and the monitor's reading of it, an answer is as current as the monitor's
/// snapshot for host names.
final class RouteVerdicts: Sendable {
    private struct Generation {
        var number = 0
        /// When the monitor thread began it: after it read the message that made it.
        var began = ContinuousClock.now
        /// The links and addresses read up to this generation, which judge a route the kernel gives.
        var state = KernelState()
        var kept: [IPAddress: TargetReachability] = [:]
        /// `false` once the monitor has stopped: nothing is answered any more.
        var running = true
    }

    private let generation = Mutex(Generation())
    /// The look-up socket, its own so that callers never wait for the monitor thread's socket; `nil` until
    /// the monitor thread has opened it in its namespace, and again once the monitor stops.
    private let lookups = Mutex<NetlinkSocket?>(nil)
    /// More distinct addresses than a session usually talks to; beyond it, all are forgotten.
    private let limit = 256

    // MARK: The monitor thread

    /// Opens the socket that look-ups use. Called on the monitor thread, so that the socket is in the
    /// monitor's network namespace whichever thread asks later.
    func openSocket() throws {
        try lookups.withLock { $0 = try NetlinkSocket() }
    }

    /// Starts a new generation from `state`: the kernel changed, or may have, and every kept answer is gone.
    func advance(to state: KernelState) {
        let now = ContinuousClock.now
        let forgotten = generation.withLock { generation in
            generation.number += 1
            generation.began = now
            generation.state = state
            defer { generation.kept = [:] }
            return generation.kept
        }
        _ = forgotten  // released outside the lock
    }

    /// Answers nothing from now on and closes the socket.
    func close() {
        generation.withLock { $0.running = false }
        lookups.withLock { $0 = nil }
    }

    // MARK: Callers

    /// The kept answer for `address`, or the kernel's route judged against the monitor's state.
    /// - Throws: ``ReachabilityError`` `.notRunning` once the monitor has stopped (or before it has started).
    func verdict(for address: IPAddress) throws(ReachabilityError) -> TargetReachability {
        let asked = ContinuousClock.now
        let read = generation.withLock { generation -> (kept: TargetReachability?, number: Int, state: KernelState)? in
            guard generation.running else { return nil }
            return (generation.kept[address], generation.number, generation.state)
        }
        guard let read else { throw ReachabilityError(.notRunning, "the reachability monitor has stopped") }
        if let kept = read.kept { return kept }

        let answers = lookups.withLock { socket in socket?.lookUpRoutes(to: [address]) }
        guard let answers else { throw ReachabilityError(.notRunning, "the reachability monitor has stopped") }
        let target = WatchedTarget(target: .address(address), resolution: .resolved([address]))
        let verdict = PathEvaluator(state: read.state, lookUpRoute: { answers[$0] ?? .failed(errno: EIO) }).reachability(of: target)

        generation.withLock { generation in
            guard generation.number == read.number, asked - generation.began >= ReachabilityMonitor.settlingTime else { return }
            if generation.kept.count >= limit { generation.kept.removeAll(keepingCapacity: true) }
            generation.kept[address] = verdict
        }
        return verdict
    }
}
