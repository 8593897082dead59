// Drives the request core for benchmarks/request-core.sh: prints one line of figures, asserts nothing.
//
//   pinpath-bench get URL COUNT CONCURRENCY [fresh] [pin=sha256/…] [ca=FILE] [gate] [executor]
// executor: the request loops prefer the session's libcurl thread (Session.executor) instead of the global pool.
//   pinpath-bench inflight URL COUNT
//   pinpath-bench paced URL COUNT rate=PER_SECOND [fresh] [pin=sha256/…] [ca=FILE] [gate]   (PacedRequests.swift)
//   pinpath-bench headers   (the header lines a session adds to every request, one per line, for curl-floor's header=)
//   pinpath-bench stream URL [pin=sha256/…] [ca=FILE] [executor]   (one body through Session.stream, counted: StreamedBody.swift)
//   pinpath-bench handshake tls://HOST:PORT|tcp://HOST:PORT COUNT CONCURRENCY [pin=sha256/…] [ca=FILE] [gate] [threads]
// handshake: tls:// checks through Session.send (a full handshake each, verified, nothing sent after it), or tcp://
// connects: the CPU per check, on whichever engine the build routes them to (the handshake engine; libcurl before
// issue 30).
// threads (get and handshake): samples the process's threads every 5 ms while the requests run (threads_peak=).
// Only when asked: the samples' /proc reads and parsing cost CPU of their own, and under callgrind, which runs
// the program ~50 times slower while the sampler keeps its 5 ms, they were most of a keep-alive run's instructions.
import FoundationEssentials
import Glibc
import PinpathHTTP
import PinpathReachability
import PinpathSecurity

// Top-level code rather than @main: the target has more than one file (PacedRequests.swift, StreamedBody.swift).
try await PinpathBench.main()

struct PinpathBench {
    static func main() async throws {
        let arguments = CommandLine.arguments
        if arguments.dropFirst().first == "headers" {
            for (name, value) in Session.standardHeaders { print("\(name): \(value)") }
            return
        }
        // `stream` takes no COUNT: one body.
        let streaming = arguments.dropFirst().first == "stream"
        guard arguments.count >= (streaming ? 3 : 4), let count = streaming ? 1 : Int(arguments[3]), let url = URL(string: arguments[2])
        else {
            fatalError(
                "usage: pinpath-bench get|handshake|inflight|paced URL COUNT [CONCURRENCY] [fresh] [pin=…] [ca=…] [gate], or stream URL [pin=…] [ca=…] [executor]"
            )
        }
        let flags = arguments.dropFirst(streaming ? 3 : 4)
        var configuration = Session.Configuration()
        var options = RequestOptions()
        options.freshConnection = flags.contains("fresh")
        options.timeout = .seconds(60)
        options.connectTimeout = .seconds(30)
        for flag in flags {
            if flag.hasPrefix("ca=") { configuration.trustStore = try TrustStore(caFile: String(flag.dropFirst(3))) }
            if flag.hasPrefix("pin=") {
                let pins = try flag.dropFirst(4).split(separator: ",").map { try SPKIPin(parsing: String($0)) }
                let policy = try SecurityPolicy(mode: .publicKey, pins: pins, requiresBackupPin: false)
                configuration.policies = HostPolicySet([HostPolicy(patterns: [try HostPattern(parsing: url.host()!)], policy: policy)])
            }
        }
        let monitor = flags.contains("gate") ? try await ReachabilityMonitor.start() : nil
        let session = try Session(configuration, monitor: monitor)
        let request = SessionRequest(method: .get, url: url)
        let sending = options
        let onSessionThread = flags.contains("executor")

        switch arguments[1] {
        case "get", "handshake":
            let concurrency = Int(flags.first ?? "1") ?? 1
            _ = try await session.send(request, options: sending)  // warm-up: trust store, first connection
            if monitor != nil {
                // The gate keeps a numeric host's verdict only once the kernel has been quiet this long (its
                // start-up dump counts): measure that steady state, not a route look-up per request.
                try await Task.sleep(for: ReachabilityMonitor.settlingTime)
                _ = try await session.send(request, options: sending)
            }
            let cpuBefore = cpuSeconds()
            let threadsBefore = threadCount()
            // The process's threads while the requests run: a thread per request would show here.
            let sampler: Task<Int, Never>? =
                !flags.contains("threads")
                ? nil
                : Task {
                    var peak = threadsBefore
                    while !Task.isCancelled {
                        peak = max(peak, threadCount())
                        try? await Task.sleep(for: .milliseconds(5))
                    }
                    return peak
                }
            let started = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<concurrency {
                    group.addTask(executorPreference: onSessionThread ? session.executor : nil) {
                        for _ in stride(from: worker, to: count, by: concurrency) {
                            let response = try await session.send(request, options: sending)
                            // A tls:// check has no status: its verified handshake is the answer; a tcp:// one, its connection.
                            precondition(
                                response.statusCode == 200
                                    || (response.statusCode == 0 && (response.tls?.evaluation != nil || request.url.scheme == "tcp")),
                                "status \(response.statusCode)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let wall = (ContinuousClock.now - started).seconds
            let cpu = cpuSeconds() - cpuBefore
            sampler?.cancel()
            let peakThreads = await sampler?.value
            print(
                """
                requests=\(count) wall_s=\(format(wall)) rps=\(format(Double(count) / wall)) \
                cpu_us_per_request=\(format(cpu / Double(count) * 1e6)) rss_mib=\(format(rssMiB())) \
                threads_before=\(threadsBefore) threads_peak=\(peakThreads.map(String.init) ?? "nan")
                """
            )
        case "inflight":
            var peak = 0.0
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<count {
                    group.addTask { _ = try await session.send(request, options: sending) }
                }
                // Sample while the slow server holds every request.
                for _ in 0..<40 {
                    try await Task.sleep(for: .milliseconds(50))
                    peak = max(peak, rssMiB())
                }
                try await group.waitForAll()
            }
            print("in_flight=\(count) peak_rss_mib=\(format(peak))")
        case "paced":
            guard let rate = flags.first(where: { $0.hasPrefix("rate=") }).flatMap({ Double($0.dropFirst(5)) }), rate > 0 else {
                fatalError("paced needs rate=PER_SECOND")
            }
            let figures = try await PacedRequests.run(
                session: session, monitor: monitor, request: request, options: sending, count: count, rate: rate)
            print(figures)
        case "stream":
            print(try await StreamedBody.run(session: session, request: request, options: sending, onSessionThread: onSessionThread))
        default:
            fatalError("unknown mode \(arguments[1])")
        }
        monitor?.stop()
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func rssMiB() -> Double { statusMiB("VmRSS:") }

    /// The process's threads now (`Threads:` of /proc/self/status).
    static func threadCount() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Threads:") })
        else { return 0 }
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last ?? "") ?? 0
    }

    /// The process's peak resident memory so far, in MiB.
    static func peakRSSMiB() -> Double { statusMiB("VmHWM:") }

    /// A memory line of /proc/self/status (kB), in MiB; 0 when it cannot be read.
    private static func statusMiB(_ field: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) })
        else { return 0 }
        return Double(line.split(separator: " ")[1]).map { $0 / 1024 } ?? 0
    }

    static func format(_ value: Double) -> String { String(Double(Int(value * 100)) / 100) }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
