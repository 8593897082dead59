import PinpathReachability
import Synchronization

/// A monitor with both of its delivery paths recorded: the `changes()` stream and an `onChange` handler.
/// Events are kept without their interface lists (see `slim`), which a storm would otherwise pile up by
/// the hundred megabytes: the audit needs only what a user sees of each path and target.
final class RecordedMonitor: Sendable {
    let label: String
    let monitor: ReachabilityMonitor
    private let streamed = Recorded()
    private let handled = Recorded()
    private let task: Task<Void, Never>

    private final class Recorded: Sendable {
        let events = Mutex<[ReachabilityEvent]>([])
        func append(_ event: ReachabilityEvent) { events.withLock { $0.append(RecordedMonitor.slim(event)) } }
        var all: [ReachabilityEvent] { events.withLock { $0 } }
    }

    init(_ label: String, _ monitor: ReachabilityMonitor) {
        self.label = label
        self.monitor = monitor
        let streamed = self.streamed
        let handled = self.handled
        let stream = monitor.changes()
        task = Task { for await event in stream { streamed.append(event) } }
        monitor.onChange { handled.append($0) }
    }

    deinit {
        task.cancel()
        monitor.stop()
    }

    /// What the stream delivered, and what the handler was called with, so far.
    var streamedEvents: [ReachabilityEvent] { streamed.all }
    var handledEvents: [ReachabilityEvent] { handled.all }

    /// The event with its paths' interface lists emptied, and the primary interface's addresses.
    static func slim(_ event: ReachabilityEvent) -> ReachabilityEvent {
        func slim(_ path: NetworkPath) -> NetworkPath {
            var path = path
            path.interfaces = []
            path.primaryInterface?.addresses = []
            return path
        }
        switch event {
        case .path(var change):
            change.path = slim(change.path)
            change.previous = change.previous.map(slim)
            return .path(change)
        case .target(var change):
            change.path = slim(change.path)
            return .target(change)
        }
    }
}
