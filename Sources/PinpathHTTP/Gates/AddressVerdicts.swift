import PinpathReachability
import Synchronization

/// The monitor's verdicts for numeric addresses, kept until it reads its next netlink message.
///
/// An address's route cannot change without the kernel saying so on the groups the monitor reads (links,
/// addresses, routes, rules), and asking the monitor again costs a route look-up and two thread hops: more
/// CPU than a keep-alive request itself. A verdict is stored with the monitor's message count read before it
/// was asked for, so one computed while a change was arriving is dropped at the next look-up, never kept past
/// it. Between the kernel's change and the monitor's reading of it, the gate answers as the monitor's
/// snapshot does for host names.
final class AddressVerdicts: Sendable {
    private struct State {
        /// The monitor's counts the verdicts were asked under.
        var statistics: ReachabilityMonitor.Statistics?
        var verdicts: [IPAddress: TargetReachability] = [:]
    }

    private let state = Mutex(State())
    /// More distinct addresses than a session usually talks to; beyond it, all are forgotten.
    private let limit = 256

    /// The stored verdict for `address`, if the monitor has read nothing since it was asked (`statistics` is
    /// its count now).
    func verdict(for address: IPAddress, now statistics: ReachabilityMonitor.Statistics) -> TargetReachability? {
        state.withLock { $0.statistics == statistics ? $0.verdicts[address] : nil }
    }

    /// Keeps `verdict`, asked for when the monitor's count was `statistics`; a verdict older than those kept
    /// is dropped, and a newer one replaces them all.
    func store(_ verdict: TargetReachability, for address: IPAddress, askedAt statistics: ReachabilityMonitor.Statistics) {
        state.withLock { state in
            if state.statistics != statistics {
                if let kept = state.statistics, statistics.messages < kept.messages { return }
                state.statistics = statistics
                state.verdicts.removeAll(keepingCapacity: true)
            }
            if state.verdicts.count >= limit { state.verdicts.removeAll(keepingCapacity: true) }
            state.verdicts[address] = verdict
        }
    }
}
