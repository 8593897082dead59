import Foundation

/// What `/proc` says of a process at one moment: its descriptors (sockets apart from the rest), its resident
/// memory and its threads.
public struct ProcessSample: Sendable {
    /// Since the soak started (zero for a reading outside a soak).
    public var elapsed: Duration
    /// Descriptors that are sockets: the probes' connections come and go; netlink and the like stay.
    public var sockets: Int
    /// Every other descriptor (files, pipes, eventfds, epoll): these should not move at all.
    public var otherDescriptors: Int
    /// `VmRSS` in KiB.
    public var residentKiB: Int
    /// `Threads`.
    public var threads: Int
    /// Probes completed so far (from the events), for the soak's table.
    public var probes: Int
    /// CPU time used so far, user and system, all threads.
    public var cpu: Duration

    public var descriptors: Int { sockets + otherDescriptors }

    /// Reads `/proc/<pid>`; `nil` when the process is gone (or is a zombie: no `fd` entries to list).
    public static func read(pid: pid_t, elapsed: Duration = .zero, probes: Int = 0) -> ProcessSample? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return nil }
            return Int(line.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        // A zombie has no VmRSS line.
        guard let resident = field("VmRSS"), let threads = field("Threads"),
            let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return nil }
        var sockets = 0
        var others = 0
        for entry in entries {
            // A descriptor closed between the listing and the readlink is simply not counted.
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(entry)") else { continue }
            if target.hasPrefix("socket:") { sockets += 1 } else { others += 1 }
        }
        guard let cpu = cpuTime(pid: pid) else { return nil }
        return ProcessSample(
            elapsed: elapsed, sockets: sockets, otherDescriptors: others, residentKiB: resident, threads: threads, probes: probes, cpu: cpu)
    }

    /// User and system CPU time of every thread of the process so far (`/proc/<pid>/stat` fields 14 and 15).
    public static func cpuTime(pid: pid_t) -> Duration? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let afterName = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)": state is field 3, so utime (14) and stime (15) are the 12th and 13th from here.
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
        return .milliseconds((user + system) * 1000 / max(ticksPerSecond, 1))
    }

    /// Descriptors, threads and resident memory in one line, for test output.
    public var vitals: String {
        "\(descriptors) fds, \(threads) threads, RSS \(String(format: "%.1f", Double(residentKiB) / 1024)) MiB"
    }

    /// Reads the process every `interval` until cancelled or the process is gone.
    public static func sample(pid: pid_t, every interval: Duration) async -> [ProcessSample] {
        let start = ContinuousClock.now
        var samples: [ProcessSample] = []
        while !Task.isCancelled, let sample = read(pid: pid, elapsed: ContinuousClock.now - start) {
            samples.append(sample)
            try? await Task.sleep(for: interval)
        }
        return samples
    }

    /// The fewest descriptors over `readings` readings `interval` apart: a probe's socket that is open at one
    /// reading is closed at another, so the minimum is the count of what the process holds for good.
    public static func settledDescriptors(pid: pid_t, readings: Int = 10, interval: Duration = .milliseconds(100)) async throws -> Int? {
        var fewest: Int?
        for _ in 0..<readings {
            guard let sample = read(pid: pid) else { return nil }
            fewest = min(fewest ?? .max, sample.descriptors)
            try await Task.sleep(for: interval)
        }
        return fewest
    }
}
