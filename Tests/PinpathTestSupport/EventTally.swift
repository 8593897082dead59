import Foundation
import Synchronization

/// Reads the agent's JSON lines from a pipe on a thread of its own and counts them: probes per endpoint and
/// error category, events per type, and anything wrong with the stream itself (a line that is not a JSON
/// object, a `seq` that does not follow the one before).
public final class EventTally: Sendable {
    /// The counts so far.
    public struct Counts: Sendable {
        /// Lines read, whole or not.
        public var lines = 0
        /// Lines that are not a JSON object (a partial line would be one).
        public var invalidLines: [String] = []
        /// Places where `seq` did not follow the previous line's by one: (expected, got).
        public var sequenceBreaks: [(expected: Int, got: Int)] = []
        public var lastSeq = 0
        /// Events by type.
        public var events: [String: Int] = [:]
        /// `probe.completed` by endpoint, then by `error_category` (`success` for none).
        public var probes: [String: [String: Int]] = [:]
        /// The `agent.stopping` event, once written.
        public var stopping: [String: Any]? {
            stoppingJSON.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        var stoppingJSON: String?

        public var probeCount: Int { events["probe.completed", default: 0] }
    }

    private final class Storage: Sendable {
        let counts = Mutex(Counts())
        let finished = Atomic<Bool>(false)
    }

    private let storage = Storage()

    /// Starts reading `descriptor` (which this object closes at end of file).
    public init(reading descriptor: Int32) {
        let storage = self.storage
        let thread = Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                pending.append(contentsOf: buffer[..<count])
                var start = pending.startIndex
                while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[start..<newline]
                    storage.counts.withLock { Self.count(line, into: &$0) }
                    start = newline + 1
                }
                pending.removeSubrange(..<start)
            }
            // What is left without a newline is a partial line.
            if !pending.isEmpty { storage.counts.withLock { Self.count(pending[...], into: &$0) } }
            close(descriptor)
            storage.finished.store(true, ordering: .releasing)
        }
        thread.name = "soak-events"
        thread.start()
    }

    public var snapshot: Counts { storage.counts.withLock { $0 } }

    /// Waits (at most `timeout`) until the writer's end is closed and everything was read.
    public func waitForEnd(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !storage.finished.load(ordering: .acquiring) {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    private static func count(_ line: ArraySlice<UInt8>, into counts: inout Counts) {
        counts.lines += 1
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            let seq = object["seq"] as? Int, let event = object["event"] as? String
        else {
            if counts.invalidLines.count < 10 { counts.invalidLines.append(String(decoding: line.prefix(300), as: UTF8.self)) }
            return
        }
        if seq != counts.lastSeq + 1 { counts.sequenceBreaks.append((counts.lastSeq + 1, seq)) }
        counts.lastSeq = seq
        counts.events[event, default: 0] += 1
        if event == "probe.completed", let endpoint = object["endpoint"] as? String {
            counts.probes[endpoint, default: [:]][object["error_category"] as? String ?? "success", default: 0] += 1
        }
        if event == "agent.stopping" { counts.stoppingJSON = String(decoding: line, as: UTF8.self) }
    }
}
