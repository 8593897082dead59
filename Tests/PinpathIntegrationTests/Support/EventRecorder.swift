import Foundation
import PinpathReachability
import PinpathTestSupport
import Synchronization
import Testing

/// Subscribes to a monitor's changes and keeps them, so a test can wait for the ones it expects.
final class EventRecorder: Sendable {
    private final class Storage: Sendable {
        let events = Mutex<[ReachabilityEvent]>([])
    }
    private let storage = Storage()
    private let task: Task<Void, Never>

    init(_ monitor: ReachabilityMonitor) {
        let stream = monitor.changes()
        let storage = self.storage
        task = Task { for await event in stream { storage.events.withLock { $0.append(event) } } }
    }

    deinit { task.cancel() }

    var all: [ReachabilityEvent] { storage.events.withLock { $0 } }

    var pathChanges: [PathChange] {
        all.compactMap { if case .path(let change) = $0 { change } else { nil } }
    }

    func targetChanges(_ target: String) -> [TargetChange] {
        all.compactMap { if case .target(let change) = $0, change.target.target == target { change } else { nil } }
    }

    /// Waits up to `timeout` for a path change matching `predicate` after the first `after` path changes.
    @discardableResult
    func waitForPath(
        after count: Int, timeout: Duration = .seconds(5), _ predicate: (PathChange) -> Bool = { _ in true }
    ) async throws -> PathChange {
        try await waitFor(timeout, "a path change after #\(count)") {
            self.pathChanges.dropFirst(count).first(where: predicate)
        }
    }

    @discardableResult
    func waitForTarget(
        _ target: String, after count: Int, timeout: Duration = .seconds(5), _ predicate: (TargetChange) -> Bool = { _ in true }
    ) async throws -> TargetChange {
        try await waitFor(timeout, "a change of \(target) after #\(count)") {
            self.targetChanges(target).dropFirst(count).first(where: predicate)
        }
    }

    private func waitFor<T>(_ timeout: Duration, _ what: String, _ found: () -> T?) async throws -> T {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let value = found() { return value }
            try await Task.sleep(for: .milliseconds(5))
        }
        if let value = found() { return value }
        throw ShellError(description: "timed out waiting for \(what); events so far: \(all)")
    }
}

/// Polls `condition` until it holds or `timeout` passes (for state that settles without an event).
func eventually(timeout: Duration = .seconds(5), _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}
