import Foundation

/// What a ``Soak`` run measured: the samples, the event counts, how the agent ended; the figures a test
/// asserts on and a table and summary to print.
///
/// "After warm-up" means the samples taken once ``warmUpEnd`` had passed: at least 30 s and every endpoint
/// probed at least 3 times (the first probes load the trust stores, grow the allocator's arenas and the
/// concurrency pool's threads to their working size).
public struct SoakReport: Sendable {
    /// How the agent ended.
    public enum Exit: Sendable, Equatable, CustomStringConvertible {
        /// It ended before the soak asked it to: a crash (or an exit) with this wait status.
        case early(status: Int32, after: Duration)
        /// It exited with `code` this long after SIGTERM.
        case stopped(code: Int32, after: Duration)
        /// It did not exit within 10 s of SIGTERM and was killed.
        case killedAfterTimeout

        public var description: String {
            switch self {
            case .early(let status, let after):
                let how =
                    status & 0x7f == 0
                    ? "exit \((status >> 8) & 0xff)" : "signal \(status & 0x7f) (\(String(cString: strsignal(status & 0x7f))))"
                return "ended by itself after \(SoakReport.seconds(after)): \(how)"
            case .stopped(let code, let after): return "exit \(code) \(SoakReport.seconds(after)) after SIGTERM"
            case .killedAfterTimeout: return "still running 10 s after SIGTERM: killed"
            }
        }
    }

    public let options: Soak.Options
    public let samples: [ProcessSample]
    /// When warm-up ended; `nil` if it never did (an endpoint that was never probed 3 times).
    public let warmUpEnd: Duration?
    public let counts: EventTally.Counts
    /// Each endpoint and the categories its probes may end with.
    public let expected: [String: Set<String>]
    public let reloads: Int
    public let exit: Exit
    public let ranAsNobody: Bool
    /// The end of what the agent wrote on standard error.
    public let agentStderr: String

    // MARK: Figures

    /// The samples after warm-up (none if it never ended).
    public var steady: [ProcessSample] { warmUpEnd.map { end in samples.filter { $0.elapsed >= end } } ?? [] }

    /// The first and last quarters of the steady samples, to compare floors.
    public var steadyQuarters: (first: ArraySlice<ProcessSample>, last: ArraySlice<ProcessSample>) {
        let steady = self.steady
        let quarter = max(1, steady.count / 4)
        return (steady.prefix(quarter), steady.suffix(quarter))
    }

    /// Resident memory at the end of warm-up and at the last sample, KiB.
    public var residentAtWarmUp: Int? { steady.first?.residentKiB }
    public var residentAtEnd: Int? { steady.last?.residentKiB }
    public var residentGrowthKiB: Int? { residentAtEnd.flatMap { end in residentAtWarmUp.map { end - $0 } } }

    /// CPU used after warm-up, in percent of one core, and per probe completed meanwhile.
    public var steadyCPU: (percent: Double, perProbe: Duration)? {
        guard let first = steady.first, let last = steady.last, last.elapsed > first.elapsed else { return nil }
        let cpu = last.cpu - first.cpu
        return (cpu / (last.elapsed - first.elapsed) * 100, cpu / max(1, last.probes - first.probes))
    }

    /// Probe results whose category is not one the endpoint may end with, by endpoint.
    public var unexpectedResults: [String: [String: Int]] {
        var unexpected: [String: [String: Int]] = [:]
        for (endpoint, categories) in counts.probes {
            for (category, count) in categories where !(expected[endpoint]?.contains(category) ?? false) {
                unexpected[endpoint, default: [:]][category] = count
            }
        }
        return unexpected
    }

    /// Endpoints whose most frequent category is not an expected one (or that were never probed).
    public var misbehavingEndpoints: [String] {
        expected.keys.sorted().filter { endpoint in
            guard let top = counts.probes[endpoint]?.max(by: { $0.value < $1.value })?.key else { return true }
            return !(expected[endpoint]?.contains(top) ?? false)
        }
    }

    // MARK: Output

    /// One row of the table: the samples of one period.
    public struct Row: Sendable {
        public var line: String

        struct Builder {
            let start: Duration
            private var samples: [ProcessSample] = []
            init(start: Duration) { self.start = start }
            var isEmpty: Bool { samples.isEmpty }
            mutating func add(_ sample: ProcessSample) { samples.append(sample) }

            func build() -> Row {
                let last = samples.last!
                let first = samples.first!
                let span = Double((last.elapsed - first.elapsed) / .milliseconds(1)) / 1000
                let rate = span > 0 ? Double(last.probes - first.probes) / span : 0
                let cpu = span > 0 ? Double((last.cpu - first.cpu) / .milliseconds(1)) / 10 / span : 0
                func range(_ values: [Int]) -> String { "\(values.min()!)–\(values.max()!)" }
                let cells = [
                    SoakReport.seconds(last.elapsed), "\(last.probes)", String(format: "%.1f", rate), String(format: "%.1f", cpu),
                    range(samples.map(\.otherDescriptors)), range(samples.map(\.sockets)),
                    String(format: "%.2f", Double(last.residentKiB) / 1024), range(samples.map(\.threads)),
                ]
                return Row(line: "| " + cells.joined(separator: " | ") + " |")
            }
        }
    }

    public static let tableHeader = """
        | time | probes | probes/s | CPU % | other fds (min–max) | sockets (min–max) | RSS MiB (last) | threads (min–max) |
        |---|---|---|---|---|---|---|---|
        """

    /// The summary: what ran, how it ended, and the figures after warm-up.
    public var summary: String {
        var lines: [String] = []
        let duration = samples.last.map { SoakReport.seconds($0.elapsed) } ?? "0 s"
        lines.append(
            """
            soak: \(duration) of pinpath run (\(options.pinpath))\(ranAsNobody ? " as nobody" : ""), \(expected.count) endpoints, \
            \(samples.count) samples, \(reloads) reloads (SIGHUP)
            """
        )
        lines.append("agent: \(exit)")
        if let stopping = counts.stopping {
            let lateness = stopping["schedule_lateness_ms"] as? [String: Any] ?? [:]
            lines.append(
                """
                agent.stopping: \(stopping["probes"] ?? "?") probes, \(stopping["failures"] ?? "?") failures, \
                \(stopping["events_dropped"] ?? "?") events dropped, schedule lateness p50 \(lateness["p50"] ?? "?") ms, p99 \
                \(lateness["p99"] ?? "?") ms, max \(lateness["max"] ?? "?") ms
                """
            )
        }
        if let warmUpEnd {
            lines.append(
                """
                warm-up: the first \(SoakReport.seconds(warmUpEnd)) (at least \(SoakReport.seconds(options.warmUpAtLeast)) and \
                \(options.warmUpProbesPerEndpoint) probes of every endpoint); \(steady.count) samples after it
                """
            )
        } else {
            lines.append("warm-up: never ended (some endpoint was probed fewer than \(options.warmUpProbesPerEndpoint) times)")
        }
        let steady = self.steady
        if !steady.isEmpty {
            let quarters = steadyQuarters
            lines.append(
                """
                descriptors after warm-up: other \
                \(steady.map(\.otherDescriptors).min()!)–\(steady.map(\.otherDescriptors).max()!), sockets \
                \(steady.map(\.sockets).min()!)–\(steady.map(\.sockets).max()!) (floor \(quarters.first.map(\.sockets).min()!) in \
                the first quarter, \(quarters.last.map(\.sockets).min()!) in the last)
                """
            )
            lines.append(
                """
                threads after warm-up: \(steady.map(\.threads).min()!)–\(steady.map(\.threads).max()!) \
                (\(samples.map(\.threads).max()!) at most over the run)
                """
            )
            if let cpu = steadyCPU {
                lines.append(
                    String(
                        format: "CPU after warm-up: %.1f%% of one core, %.2f ms per probe", cpu.percent,
                        Double(cpu.perProbe / .microseconds(1)) / 1000))
            }
            let growth = residentGrowthKiB ?? 0
            lines.append(
                String(
                    format:
                        "RSS: %.2f MiB at the end of warm-up, %.2f MiB at the end, growth %+d KiB (goal: under 1 MiB: %@), peak %.2f MiB",
                    Double(residentAtWarmUp ?? 0) / 1024, Double(residentAtEnd ?? 0) / 1024, growth, growth < 1024 ? "met" : "not met",
                    Double(samples.map(\.residentKiB).max() ?? 0) / 1024))
        }
        var byCategory: [String: Int] = [:]
        for categories in counts.probes.values { for (category, count) in categories { byCategory[category, default: 0] += count } }
        lines.append(
            "probes: \(counts.probeCount); by category: "
                + byCategory.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        let unexpected = unexpectedResults
        lines.append(
            "unexpected categories: "
                + (unexpected.isEmpty
                    ? "none" : unexpected.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "; ")))
        lines.append(
            """
            events: \(counts.lines) lines, \(counts.invalidLines.count) not JSON, \(counts.sequenceBreaks.count) seq breaks, \
            \(counts.events["events.dropped", default: 0]) events.dropped, \(counts.events["config.reloaded", default: 0]) \
            config.reloaded, \(counts.events["pin.failure", default: 0]) pin.failure
            """
        )
        if !agentStderr.isEmpty { lines.append("agent stderr: \(agentStderr)") }
        return lines.joined(separator: "\n")
    }

    /// `12.3 s` or `4 min 05 s`.
    public static func seconds(_ duration: Duration) -> String {
        let seconds = Double(duration / .milliseconds(1)) / 1000
        if seconds < 120 { return String(format: "%.1f s", seconds) }
        return String(format: "%d min %02d s", Int(seconds) / 60, Int(seconds) % 60)
    }
}
