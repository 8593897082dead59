import Foundation
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 25, round 5 of the attacker's review: probes in flight are bounded (256), and an included file's 300
/// endpoints on a server that never answers, with timeouts as long as their intervals, held every place: a main-file
/// endpoint behind an interceptor was never probed, so never `down`. Included files now share at most 192 places,
/// and the main file's due probes start first.
@Suite("Included files cannot take every place among the probes in flight", .serialized)
struct AdmissionAttackTests {
    @Test(
        "Attack: 300 included endpoints on a server that never answers leave a main-file endpoint behind an interceptor probed and down",
        .timeLimit(.minutes(2)))
    func includedTarpit() async throws {
        let directory = try TemporaryDirectory()
        let tarpit = try HostileServer(.silent)
        defer { tarpit.stop() }
        // The interceptor: a chain from the test CA, which the system store does not trust.
        let interceptor = try RecordingServer(
            certificate: (TestPKI.shared.path("valid"), TestPKI.shared.path("valid", "key"), [TestPKI.shared.path("inter")]),
            directory: directory.path)
        defer { interceptor.stop() }
        try FileManager.default.createDirectory(atPath: directory.file("conf.d"), withIntermediateDirectories: true)
        try """
        events: { output: \(directory.file("events.jsonl")), probes: all }
        include: conf.d/*.yaml
        endpoints:
          - { name: main-tls, url: "\(interceptor.origin)/", interval: 2s, timeout: 2s, failure_threshold: 2 }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let team = (0..<300).map { "  - { name: t\($0), url: \"http://127.0.0.1:\(tarpit.port)/\($0)\", interval: 10m, timeout: 10m }\n" }
        try ("endpoints:\n" + team.joined()).write(toFile: directory.file("conf.d/team.yaml"), atomically: true, encoding: .utf8)

        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }
        try await MetricsEndpointTests.wait("main-tls down on tls_invalid beside 300 stalled included probes", timeout: .seconds(30)) {
            PatternLimitAttackTests.state(PatternLimitAttackTests.events(directory), of: "main-tls") == "down"
        }
        let probes = PatternLimitAttackTests.probes(PatternLimitAttackTests.events(directory), of: "main-tls")
        #expect(probes.allSatisfy { $0["error_category"] as? String == "tls_invalid" }, "\(probes)")
        // The included probes were all in flight (connected, or in the tarpit's backlog), none finished.
        #expect(tarpit.connections > 0)
        #expect(
            !PatternLimitAttackTests.events(directory).contains {
                $0["event"] as? String == "probe.completed" && $0["endpoint"] as? String != "main-tls"
            })
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(10)) == 0)
    }

    /// Round 6 (review): a reload left the old probes of changed and removed endpoints running; an endpoint whose
    /// server never answered kept its name busy for its whole old timeout (10 minutes here), so the corrected
    /// endpoint was not probed. A reload now cancels them.
    @Test("A reload that changes a stalled endpoint probes the new one at once, not after the old probe's timeout", .timeLimit(.minutes(2)))
    func reloadCancelsStalledProbe() async throws {
        let directory = try TemporaryDirectory()
        let tarpit = try HostileServer(.silent)
        defer { tarpit.stop() }
        let interceptor = try RecordingServer(
            certificate: (TestPKI.shared.path("valid"), TestPKI.shared.path("valid", "key"), [TestPKI.shared.path("inter")]),
            directory: directory.path)
        defer { interceptor.stop() }
        let configuration = directory.file("pinpath.yaml")
        let write = { (url: String, timing: String) in
            try
                "events: { output: \(directory.file("events.jsonl")), probes: all }\nendpoints:\n  - { name: api, url: \"\(url)\", \(timing) }\n"
                .write(toFile: configuration, atomically: true, encoding: .utf8)
        }
        try write("http://127.0.0.1:\(tarpit.port)/", "interval: 10m, timeout: 10m")
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let agent = try Shell.spawn([Shell.pinpath, "run", "--config", configuration], stdout: devNull)
        defer { Shell.stopIfRunning(agent) }
        try await MetricsEndpointTests.wait("the first probe stalled in the tarpit") { tarpit.connections >= 1 }
        try write("\(interceptor.origin)/", "interval: 2s, timeout: 2s")
        kill(agent, SIGHUP)
        try await MetricsEndpointTests.wait("the changed endpoint probed after the reload", timeout: .seconds(15)) {
            PatternLimitAttackTests.probes(PatternLimitAttackTests.events(directory), of: "api").contains {
                $0["error_category"] as? String == "tls_invalid"
            }
        }
        #expect(try await Shell.stop(agent, signal: SIGTERM, timeout: .seconds(10)) == 0)
    }

    @Test("Included probes take at most 192 places; the main file's queued probes start first")
    func includedShare() {
        var admission = ProbeAdmission()
        let task = Task<Void, Never> {}
        let now = ContinuousClock.now
        for index in 0..<ProbeAdmission.maximumIncludedInFlight {
            let admitted = admission.admit("t\(index)", due: now, included: true)
            #expect(admitted)
            admission.started("t\(index)", task: task, due: nil, included: true)
        }
        let includedMore = admission.admit("t-more", due: now, included: true)
        #expect(!includedMore, "the included share is full")
        let mainFirst = admission.admit("main-0", due: now, included: false)
        #expect(mainFirst, "the main file's room is left")
        for index in 0..<(ProbeAdmission.maximumInFlight - ProbeAdmission.maximumIncludedInFlight) {
            admission.started("main-\(index)", task: task, due: nil, included: false)
        }
        let mainLate = admission.admit("main-late", due: now, included: false)
        #expect(!mainLate)
        // Room frees: the main file's queued probe starts before the included one queued earlier.
        admission.finished("t0")
        let first = admission.nextWaiting()
        #expect(first?.name == "main-late")
        admission.started("main-late", task: task, due: nil, included: false)
        admission.finished("main-1")
        let second = admission.nextWaiting()
        #expect(second?.name == "t-more")
    }
}
