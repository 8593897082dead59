import PinpathHTTP
import PinpathSupport

/// Runs the connectivity check (`connectivity:`) through the agent's session: at start, every `interval`,
/// and again once the path has been quiet for a moment after each change, so that a burst of netlink events
/// costs one check, not one per event. Each verdict goes to `report`; the agent writes the event when the
/// state changed.
actor ConnectivityWatcher {
    /// How long the path must stay unchanged before the re-check: one burst of netlink changes (a link and
    /// its addresses and routes coming up) then costs one check.
    static let quietPeriod = Duration.milliseconds(500)

    private let session: Session
    private let configuration: ConnectivityConfiguration
    private let report: @Sendable (ConnectivityVerdict) async -> Void
    /// The last path change not yet checked after.
    private var pathChangedAt: ContinuousClock.Instant?
    private var stopping = false
    private let sleeper = WakeableSleep()

    init(session: Session, configuration: ConnectivityConfiguration, report: @escaping @Sendable (ConnectivityVerdict) async -> Void) {
        self.session = session
        self.configuration = configuration
        self.report = report
    }

    /// Checks until ``stop()``.
    func run() async {
        while !stopping {
            pathChangedAt = nil
            let verdict = await session.checkConnectivity(configuration.check)
            if stopping || Task.isCancelled { return }
            await report(verdict)
            let periodic = ContinuousClock.now + configuration.interval
            while !stopping {
                let due = pathChangedAt.map { $0 + Self.quietPeriod } ?? periodic
                if ContinuousClock.now >= due { break }
                await sleeper.sleep(until: due, tolerance: .milliseconds(10))
            }
        }
    }

    /// The path changed: check again once it has been quiet for ``quietPeriod``.
    func pathChanged() {
        pathChangedAt = .now
        wake()
    }

    /// Ends ``run()`` at its next turn (a check in flight is ended by cancelling its task).
    func stop() {
        stopping = true
        wake()
    }

    private func wake() { sleeper.wake() }
}
