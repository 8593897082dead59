import PinpathReachability
import Synchronization

/// The monitor's verdicts for numeric addresses, kept until it reads its next netlink message.
///
/// An address's route cannot change without the kernel saying so on the groups the monitor reads (links,
/// addresses, routes, rules), and asking the monitor again costs a route look-up and two thread hops: more
/// CPU than a keep-alive request itself. Two rules keep a verdict from outliving the state it was read from:
/// - it is kept under the monitor's message count read before asking, so one asked while a change arrived
///   is never kept past it;
/// - only a verdict asked once the kernel has settled is kept (``ReachabilityMonitor/settlingTime`` after
///   this gate first saw the count), because the kernel announces some changes a moment before route
///   look-ups see them (a deleted route is announced, then unlinked).
///
/// Between the kernel's change and the monitor's reading of it, the gate answers as the monitor's snapshot
/// does for host names.
final class AddressVerdicts: Sendable {
    private struct State {
        /// The monitor's counts the kept verdicts were asked under, and when this gate first saw them (no
        /// earlier than the monitor read the message that made them).
        var statistics: ReachabilityMonitor.Statistics?
        var seen = ContinuousClock.now
        var verdicts: [IPAddress: TargetReachability] = [:]
    }

    /// What a verdict is asked under.
    private struct Asking {
        let statistics: ReachabilityMonitor.Statistics
        let time: ContinuousClock.Instant
    }

    private let monitor: ReachabilityMonitor
    private let state = Mutex(State())
    /// More distinct addresses than a session usually talks to; beyond it, all are forgotten.
    private let limit = 256

    init(monitor: ReachabilityMonitor) { self.monitor = monitor }

    /// The verdict for `address`: the kept one, or the monitor's (`nil` when it cannot answer).
    func verdict(for address: IPAddress) async -> TargetReachability? {
        let (kept, asking) = lookUp(address)
        if let kept { return kept }
        return keep(try? await monitor.reachability(of: .address(address)), for: address, asking)
    }

    /// ``verdict(for:)`` for a plain thread that cannot await (libcurl's socket callback); `nil` also when the
    /// monitor does not answer within `timeout`.
    func verdictBlocking(for address: IPAddress, timeout: Duration) -> TargetReachability? {
        let (kept, asking) = lookUp(address)
        if let kept { return kept }
        return keep(monitor.reachabilityBlocking(of: address, timeout: timeout), for: address, asking)
    }

    private func lookUp(_ address: IPAddress) -> (kept: TargetReachability?, asking: Asking) {
        let statistics = monitor.statistics
        let now = ContinuousClock.now
        let kept = state.withLock { state -> TargetReachability? in
            guard state.statistics == statistics else {
                // A count not seen before (or, from a slower caller, an older one): the kept verdicts are stale.
                if state.statistics.map({ statistics.messages > $0.messages }) ?? true {
                    state.statistics = statistics
                    state.seen = now
                    state.verdicts.removeAll(keepingCapacity: true)
                }
                return nil
            }
            return state.verdicts[address]
        }
        return (kept, Asking(statistics: statistics, time: now))
    }

    private func keep(_ verdict: TargetReachability?, for address: IPAddress, _ asking: Asking) -> TargetReachability? {
        guard let verdict else { return nil }
        state.withLock { state in
            guard state.statistics == asking.statistics, asking.time - state.seen >= ReachabilityMonitor.settlingTime else { return }
            if state.verdicts.count >= limit { state.verdicts.removeAll(keepingCapacity: true) }
            state.verdicts[address] = verdict
        }
        return verdict
    }
}
