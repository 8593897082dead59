import Foundation

/// A process's open file descriptors, threads and resident memory, read from /proc.
struct ProcessVitals: CustomStringConvertible {
    var descriptors: Int
    var threads: Int
    var residentKiB: Int
    /// User and system CPU time since it started, all threads.
    var cpuSeconds: Double

    /// `nil` once the process is gone.
    init?(pid: pid_t) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return nil }
        // Fields 14 and 15 (utime, stime, in clock ticks), counted after the command name's closing parenthesis.
        let fields = stat[(stat.lastIndex(of: ")") ?? stat.startIndex)...].split(separator: " ")
        let ticks = [12, 13].compactMap { fields.count > $0 ? Double(fields[$0]) : nil }.reduce(0, +)
        cpuSeconds = ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix("\(name):") } ?? ""
            return Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0
        }
        self.descriptors = descriptors.count
        threads = field("Threads")
        residentKiB = field("VmRSS")
    }

    var description: String {
        "\(descriptors) fds, \(threads) threads, RSS \(String(format: "%.1f", Double(residentKiB) / 1024)) MiB"
    }

    /// Reads a process's vitals every `interval` until cancelled or the process is gone.
    static func sample(pid: pid_t, every interval: Duration) async -> [ProcessVitals] {
        var samples: [ProcessVitals] = []
        while !Task.isCancelled, let vitals = ProcessVitals(pid: pid) {
            samples.append(vitals)
            try? await Task.sleep(for: interval)
        }
        return samples
    }

    /// The fewest descriptors over `samples` readings `interval` apart: a probe's socket that is open at one
    /// reading is closed at another, so the minimum is the count of what the process holds for good.
    static func settledDescriptors(pid: pid_t, samples: Int = 10, interval: Duration = .milliseconds(100)) async throws -> Int? {
        var fewest: Int?
        for _ in 0..<samples {
            guard let vitals = ProcessVitals(pid: pid) else { return nil }
            fewest = min(fewest ?? .max, vitals.descriptors)
            try await Task.sleep(for: interval)
        }
        return fewest
    }
}
