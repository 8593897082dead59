import Foundation
import PinpathHTTP
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 26, items 2 to 5: the Agent's `probe(_:)`, the entry `/probe` calls, run in this process against real
/// servers on loopback (`openssl s_server`, the recording Python server) with the test PKI: the same session,
/// gate, policy and verifier as an endpoint; the admission before any connection; the security signals.
@Suite("Target probes through the agent", .serialized)
struct TargetProbeTests {
    let pki = TestPKI.shared
    let clients = ClientCertificatePKI.shared

    /// An agent started in this process on a configuration, stopped by ``stop()``.
    final class RunningAgent {
        let directory: TemporaryDirectory
        let agent: Agent
        let run: Task<Bool, Never>

        init(_ configuration: (TemporaryDirectory) throws -> String) async throws {
            directory = try TemporaryDirectory("target-probe")
            let text = "events: { output: \(directory.file("events.jsonl")), probes: all }\n" + (try configuration(directory))
            try text.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            do {
                agent = try await Agent.start(configurationPath: directory.file("pinpath.yaml"))
            } catch {
                throw ShellError(description: "the agent did not start: \(error)")
            }
            let agent = self.agent
            run = Task { await agent.run() }
        }

        func stop() async {
            agent.stop(reason: "test")
            _ = await run.value
        }

        func probe(_ module: String, _ target: String, deadline: Duration? = nil) async -> TargetProbeAnswer {
            await agent.probe(TargetProbeRequest(module: module, target: target, deadline: deadline, debug: true))
        }

        var events: [[String: Any]] {
            (directory.read("events.jsonl") ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        func of(_ type: String) -> [[String: Any]] { events.filter { $0["event"] as? String == type } }
    }

    func pins(_ names: [String]) throws -> String { try pki.chain(names).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ") }

    /// The server's chain pinned (`good`) and another CA's keys pinned (`wrong`, reporting to `reportURI`).
    func policies(reportURI: String? = nil) throws -> String {
        """
        policies:
          good: { mode: public_key, pins: [\(try pins(["inter", "root"]))], ca_file: \(pki.path("store")) }
          wrong: { mode: public_key, pins: [\(try pins(["otherinter", "otherroot"]))], ca_file: \(pki.path("store"))\(reportURI.map { ", report_uri: \"\($0)\"" } ?? "") }
          collector: { mode: none, hosts: ["::1"], ca_file: \(pki.path("store")) }

        """
    }

    static func result(_ answer: TargetProbeAnswer) throws -> (ProbeResult, [String]) {
        guard case .probed(let result, let log) = answer else { throw ShellError(description: "not probed: \(answer)") }
        return (result, log ?? [])
    }

    static func refusal(_ answer: TargetProbeAnswer) -> String? {
        if case .refused(let reason) = answer { return reason }
        return nil
    }

    @Test(
        """
        A pinned https target succeeds and a tls:// host:port target too; a wrong pin fails as policy_rejected with a \
        pin.failure naming module and target and a report to report_uri; no endpoint event is written
        """)
    func pinnedTargets() async throws {
        let scratch = try TemporaryDirectory("target-servers")
        let server = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: scratch.path)
        defer { server.stop() }
        let collector = try RecordingServer(
            address: "::1", certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: scratch.path)
        defer { collector.stop() }
        let running = try await RunningAgent { _ in
            try policies(reportURI: "\(collector.origin)/report")
                + """
                modules:
                  web: { kind: https, policy: good, targets: [127.0.0.0/8] }
                  bad: { kind: https, policy: wrong, targets: [127.0.0.0/8] }
                  raw: { kind: tls, policy: good, targets: [127.0.0.0/8] }
                  mtls: { kind: https, policy: good, targets: [127.0.0.0/8], client_certificate: \(clients.path("client")), client_key: \(clients.path("client", "key")) }
                """
        }
        let good = try Self.result(await running.probe("web", "127.0.0.1:\(server.port)"))
        #expect(good.0.outcome == .success, "\(good.0.message ?? "") \(good.1)")
        #expect(good.0.evaluation?.verifiedChain.count == 3)
        #expect(good.1.contains("admitted: connecting to 127.0.0.1 only (later DNS answers are not used)"), "\(good.1)")
        #expect(good.1.contains { $0.hasPrefix("verified chain: 3 certificates") }, "\(good.1)")
        #expect(good.1.contains { $0.contains("subject CN=Loopback; issuer CN=Pinpath Test Intermediate") }, "\(good.1)")
        #expect(good.1.contains("policy: trusted"), "\(good.1)")
        // Each rule's verdict, in pinpath verify's words: the intermediate's pin is the first that matches.
        let intermediatePin = try pki.chain(["inter"])[0].spkiPin
        for line in [
            "rule chain: valid", "rule host: valid for 127.0.0.1", "rule ocsp: none",
            "rule pins: \(intermediatePin) matched at depth 1 (CN=Pinpath Test Intermediate)",
        ] {
            #expect(good.1.contains(line), "\(line): \(good.1)")
        }
        #expect(good.1.contains { $0.hasPrefix("rule profile: ") && !$0.hasPrefix("rule profile: none") }, "\(good.1)")

        #expect(!good.1.contains { $0.hasPrefix("client certificate:") }, "the module has none: \(good.1)")
        let mutual = try Self.result(await running.probe("mtls", "127.0.0.1:\(server.port)"))
        #expect(mutual.0.outcome == .success, "\(mutual.0.message ?? "") \(mutual.1)")
        #expect(
            mutual.1.contains("client certificate: \(clients.path("client")) (sent when the server asks for one)"), "\(mutual.1)")

        let raw = try Self.result(await running.probe("raw", "127.0.0.1:\(server.port)"))
        #expect(raw.0.outcome == .success && raw.0.kind == .tls, "\(raw.0.message ?? "")")

        let bad = try Self.result(await running.probe("bad", "127.0.0.1:\(server.port)"))
        #expect(bad.0.outcome == .failure)
        #expect(bad.0.errorCategory == .policyRejected)
        #expect(bad.1.contains { $0.hasPrefix("policy: rejected: 127.0.0.1: certificate pinning failure") }, "\(bad.1)")
        #expect(bad.1.contains("outcome failure, category policy_rejected"), "\(bad.1)")
        // The chain and the host passed; the pins rule failed, with OkHttp's account (the pins expected follow).
        #expect(bad.1.contains("rule chain: valid") && bad.1.contains("rule host: valid for 127.0.0.1"), "\(bad.1)")
        let pinsLine = try #require(bad.1.firstIndex { $0.hasPrefix("rule pins: 127.0.0.1: certificate pinning failure") }, "\(bad.1)")
        let otherPin = try pki.chain(["otherinter"])[0].spkiPin
        #expect(bad.1[pinsLine...].contains { $0.hasPrefix("  ") && $0.contains(otherPin.description) }, "\(bad.1)")
        // The event writer is a thread of its own: the line is written shortly after the probe returns.
        let written = ContinuousClock.now + .seconds(10)
        while running.of("pin.failure").isEmpty && ContinuousClock.now < written { try await Task.sleep(for: .milliseconds(50)) }
        let failure = try #require(running.of("pin.failure").first, "\(running.events)")
        #expect(failure["module"] as? String == "bad")
        #expect(failure["target"] as? String == "https://127.0.0.1:\(server.port)")
        #expect(failure["endpoint"] is NSNull)
        #expect(failure["validation-result"] as? Int == 1)
        // The report arrives at the policy's collector, as an endpoint's does.
        let deadline = ContinuousClock.now + .seconds(20)
        while collector.requests.isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        let report = try #require(collector.requests.first, "no report arrived")
        #expect(report.method == "POST" && report.path == "/report")
        #expect(report.body.contains("\"known-pins\""))

        await running.stop()
        let names = Set(running.events.compactMap { $0["event"] as? String })
        #expect(names.isDisjoint(with: ["endpoint.state_changed", "probe.completed", "certificate.expiring"]), "\(names)")
        #expect(running.of("agent.stopping").first?["pin_failures"] as? Int == 1)
    }

    /// Attacker's review of issue 26: 150 `/probe` pin failures on 127.0.1.i filled the collector's one queue of 100
    /// while it never answered, and a real endpoint's MITM then wrote `pin.failure` but its report was dropped
    /// (`dropped: 51`). Target probe reports now have their own share of the queue.
    @Test("Attack: 150 target probe pin failures to a collector that never answers leave room for an endpoint's report")
    func targetProbesCannotCrowdOutEndpointReports() async throws {
        let scratch = try TemporaryDirectory("target-flood")
        let collector = try SilentServer()
        defer { collector.stop() }
        // A leaf for 127.0.0.1 and 127.0.1.1-150 from the test intermediate: chain and host name hold, only the pins fail.
        let sans = (["IP:127.0.0.1"] + (1...150).map { "IP:127.0.1.\($0)" }).joined(separator: ",")
        try "basicConstraints = CA:false\nextendedKeyUsage = serverAuth\nsubjectAltName = \(sans)\n".write(
            toFile: scratch.file("leaf.cnf"), atomically: true, encoding: .utf8)
        try Shell.check([
            "sh", "-c",
            """
            cd '\(scratch.path)' && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key \
              -subj /CN=flood -out leaf.csr 2>/dev/null && openssl x509 -req -in leaf.csr -CA '\(pki.path("inter"))' \
              -CAkey '\(pki.path("inter", "key"))' -set_serial 26150 -days 30 -extfile leaf.cnf -out leaf.pem 2>/dev/null
            """,
        ])
        // On every address, so that 127.0.1.i reaches it: each i is another host:port, which no deduplication merges.
        let port = try TLSServer.freePort()
        let server = try Shell.spawn([
            "openssl", "s_server", "-quiet", "-www", "-accept", "0.0.0.0:\(port)", "-cert", scratch.file("leaf.pem"), "-key",
            scratch.file("leaf.key"), "-cert_chain", pki.path("inter"),
        ])
        defer { Shell.kill(server) }
        for _ in 0..<200 where (try? TLSServer.connectLoopback(port: port)).map({ close($0) }) == nil { usleep(10_000) }
        let policies = try policies(reportURI: "http://127.0.0.1:\(collector.port)/report")
        let modules = "modules:\n  bad: { kind: https, policy: wrong, timeout: 5s, targets: [127.0.0.0/8] }\n"
        let running = try await RunningAgent { _ in policies + modules }
        for index in 1...150 {
            let (result, log) = try Self.result(await running.probe("bad", "127.0.1.\(index):\(port)"))
            #expect(result.errorCategory == .policyRejected, "\(result.message ?? "") \(log)")
        }
        let allWritten = ContinuousClock.now + .seconds(10)
        while running.of("pin.failure").count < 150 && ContinuousClock.now < allWritten { try await Task.sleep(for: .milliseconds(50)) }
        #expect(running.of("pin.failure").count == 150)

        // Now a configured endpoint behind the same interceptor.
        let endpoint = "endpoints:\n  - { name: main, url: \"https://127.0.0.1:\(port)/\", policy: wrong, interval: 1s }\n"
        try (String(contentsOfFile: running.directory.file("pinpath.yaml"), encoding: .utf8) + endpoint)
            .write(toFile: running.directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        running.agent.reload()
        let deadline = ContinuousClock.now + .seconds(20)
        while !running.of("pin.failure").contains(where: { $0["endpoint"] as? String == "main" }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        let others = running.events.filter { $0["event"] as? String != "pin.failure" }
        let written = running.of("pin.failure").contains { $0["endpoint"] as? String == "main" }
        #expect(written, "the endpoint's pin.failure was not written: \(others)")

        // The collector still holds the first report; stopping writes an event for every report still held.
        await running.stop()
        let reports = running.events.filter { ($0["event"] as? String)?.hasPrefix("report.") == true }
        #expect(
            reports.contains { $0["endpoint"] as? String == "main" },
            "the endpoint's report was dropped: \(reports.compactMap { $0["dropped"] as? Int }.filter { $0 > 0 }) dropped")
        #expect(reports.compactMap { $0["dropped"] as? Int }.reduce(0, +) == 50, "the probes' own share (100) was bounded")
    }

    @Test("A closed port fails as connect_failed; the scraper's deadline lowers the module's timeout")
    func closedPortAndDeadline() async throws {
        let port = try TLSServer.freePort()
        let running = try await RunningAgent { _ in
            "modules:\n  raw: { kind: tcp, timeout: 5s, targets: [127.0.0.0/8] }\n"
        }
        let (result, log) = try Self.result(await running.probe("raw", "127.0.0.1:\(port)", deadline: .milliseconds(1500)))
        #expect(result.outcome == .failure && result.errorCategory == .connectFailed, "\(result.errorCategory?.rawValue ?? "") \(log)")
        #expect(log.contains("timeout 1500ms (the module's 5s, the scraper's deadline 1500ms)"), "\(log)")
        await running.stop()
    }

    @Test(
        """
        Refused targets make no connection: outside targets:, loopback and localhost without targets:, the metadata \
        address; an unknown module and a target that does not parse are invalid
        """)
    func refusals() async throws {
        let scratch = try TemporaryDirectory("target-refusals")
        let server = try RecordingServer(directory: scratch.path)
        defer { server.stop() }
        let running = try await RunningAgent { _ in
            """
            modules:
              open: { kind: http }
              lan: { kind: http, targets: [10.0.0.0/8] }
              local: { kind: http, targets: [127.0.0.1/32] }
            """
        }
        let outside = Self.refusal(await running.probe("lan", "127.0.0.1:\(server.port)"))
        #expect(outside?.contains("127.0.0.1 is a loopback address") == true, "\(String(describing: outside))")
        let loopback = Self.refusal(await running.probe("open", "127.0.0.1:\(server.port)"))
        #expect(loopback?.contains("loopback") == true, "\(String(describing: loopback))")
        let byName = Self.refusal(await running.probe("open", "http://localhost:\(server.port)/"))
        #expect(byName?.contains("localhost resolved to 127.0.0.1") == true, "\(String(describing: byName))")
        let metadata = Self.refusal(await running.probe("open", "http://169.254.169.254/latest/meta-data/"))
        #expect(metadata?.contains("metadata") == true, "\(String(describing: metadata))")
        if case .invalid(let message) = await running.probe("nope", "127.0.0.1:1") {
            #expect(message.contains(#"unknown module "nope""#), "\(message)")
            // Any client may ask: the configuration's module names are not told.
            #expect(!message.contains("lan") && !message.contains("open"), "\(message)")
        } else {
            Issue.record("an unknown module was not invalid")
        }
        if case .invalid(let message) = await running.probe("open", "ftp://example.test/") {
            #expect(message.contains("probes http://"), "\(message)")
        } else {
            Issue.record("a target of another kind was not invalid")
        }
        #expect(server.requests.isEmpty, "a refused target was connected to: \(server.requests.map(\.path))")

        // Admitted by its range, through a name: the connection goes to the address checked, shown in the log.
        let (result, log) = try Self.result(await running.probe("local", "http://localhost:\(server.port)/pinned"))
        #expect(result.outcome == .success, "\(result.message ?? "") \(log)")
        #expect(log.contains("admitted: connecting to 127.0.0.1 only (later DNS answers are not used)"), "\(log)")
        #expect(result.remoteAddress == "127.0.0.1:\(server.port)")
        #expect(server.requests.map(\.path) == ["/pinned"])
        #expect(server.requests.first?.header("Host") == "localhost:\(server.port)")
        await running.stop()
    }

    @Test("A name that does not resolve fails as resolve_failed without a connection")
    func unresolved() async throws {
        let running = try await RunningAgent { _ in "modules:\n  open: { kind: http }\n" }
        let (result, log) = try Self.result(await running.probe("open", "http://nothing.invalid/"))
        #expect(result.outcome == .failure && result.errorCategory == .resolveFailed, "\(log)")
        #expect(log.contains("not resolved: nothing.invalid did not resolve; nothing was connected to"), "\(log)")
        await running.stop()
    }

    @Test("A reload replaces the modules; a rejected reload keeps the running ones")
    func reload() async throws {
        let running = try await RunningAgent { _ in "modules:\n  first: { kind: http }\n" }
        let file = running.directory.file("pinpath.yaml")
        let events = "events: { output: \(running.directory.file("events.jsonl")), probes: all }\n"
        func isUnknown(_ answer: TargetProbeAnswer) -> Bool {
            if case .invalid(let message) = answer { return message.contains("unknown module") }
            return false
        }
        try (events + "modules:\n  second: { kind: http }\n").write(toFile: file, atomically: true, encoding: .utf8)
        running.agent.reload()
        let deadline = ContinuousClock.now + .seconds(10)
        while isUnknown(await running.probe("second", "http://nothing.invalid/")) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(!isUnknown(await running.probe("second", "http://nothing.invalid/")))
        #expect(isUnknown(await running.probe("first", "http://nothing.invalid/")))

        try (events + "modules:\n  third: { kind: http, url: \"http://x/\" }\n").write(toFile: file, atomically: true, encoding: .utf8)
        running.agent.reload()
        while running.of("config.rejected").isEmpty && ContinuousClock.now < deadline + .seconds(10) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(running.of("config.rejected").count == 1)
        #expect(!isUnknown(await running.probe("second", "http://nothing.invalid/")), "the running modules stay")
        await running.stop()
    }

    @Test("A redirect to another host or port is not followed: its address was never checked")
    func redirectsStay() async throws {
        let scratch = try TemporaryDirectory("target-redirect")
        let server = try RecordingServer(directory: scratch.path)
        defer { server.stop() }
        let elsewhere = try RecordingServer(directory: scratch.path)
        defer { elsewhere.stop() }
        let running = try await RunningAgent { _ in "modules:\n  local: { kind: http, targets: [127.0.0.0/8] }\n" }
        let (result, log) = try Self.result(
            await running.probe("local", server.redirect(302, to: "http://169.254.169.254:\(elsewhere.port)/latest/meta-data/")))
        #expect(result.outcome == .failure && result.errorCategory == .insecureRedirect, "\(log)")
        #expect(result.message?.contains("another host or port, which was not checked; not followed") == true, "\(result.message ?? "")")
        // On the same host and port, a redirect is followed.
        let (same, _) = try Self.result(await running.probe("local", server.redirect(302, to: "\(server.origin)/after")))
        #expect(same.outcome == .success, "\(same.message ?? "")")
        #expect(server.requests.last?.path == "/after")
        #expect(elsewhere.requests.isEmpty)
        await running.stop()
    }

    /// The `/probe` answer as 00836fd rendered it, kept as the reference the direct rendering must equal: the
    /// probe made into an endpoint's snapshot, its lines rendered as `/metrics` renders an endpoint's without the
    /// label, the endpoint-only families (its state, its pin failures since start) dropped.
    static func throughEndpointSnapshot(_ result: ProbeResult, seconds: Double) -> String {
        var endpoint = MetricsSnapshot.Endpoint(
            name: "", lastProbe: EndpointTracker.LastProbe(result), kind: result.kind, state: .unknown)
        endpoint.probeDuration = seconds
        let lines = RenderedEndpoint(endpoint, labels: "")
        var out = MetricsExposition.Output(format: .prometheus)
        for (index, family) in RenderedEndpoint.families.enumerated()
        where !["pinpath_endpoint_state", "pinpath_pin_failures"].contains(family.name) {
            let section = lines.section(index)
            guard !section.isEmpty else { continue }
            out.family(family.name, family.type, family.help)
            out.text.append(contentsOf: section)
        }
        return String(decoding: out.text, as: UTF8.self)
    }

    @Test(
        """
        The /probe exposition of real probes of every kind (http, https, tls, tcp, SMTP STARTTLS; successes, a wrong \
        pin, an HTTP error status, an unexpected banner, a closed port) is byte for byte what the endpoint's \
        snapshot rendered
        """)
    func expositionOfEachKindAsBefore() async throws {
        let scratch = try TemporaryDirectory("target-exposition")
        let tls = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: scratch.path)
        defer { tls.stop() }
        let http = try RecordingServer(directory: scratch.path)
        defer { http.stop() }
        let failing = try RecordingServer(directory: scratch.path, failing: (503, Int.max))
        defer { failing.stop() }
        let banner = try MailServer(.tcp, .greet, directory: scratch.path)
        defer { banner.stop() }
        let smtp = try MailServer(.smtp, .starttls, certificate: try ProbeKindsAgentTests().mailChain(), directory: scratch.path)
        defer { smtp.stop() }
        let closed = try TLSServer.freePort()
        let running = try await RunningAgent { _ in
            try policies()
                + """
                modules:
                  web: { kind: https, policy: good, targets: [127.0.0.0/8] }
                  bad: { kind: https, policy: wrong, targets: [127.0.0.0/8] }
                  raw: { kind: tls, policy: good, targets: [127.0.0.0/8] }
                  plain: { kind: http, targets: [127.0.0.0/8] }
                  banner: { kind: tcp, expect: { banner: SSH-2.0 }, targets: [127.0.0.0/8] }
                  other_banner: { kind: tcp, expect: { banner: "220 " }, targets: [127.0.0.0/8] }
                  mail: { kind: smtp, starttls: true, policy: good, expect: { banner: ESMTP }, targets: [127.0.0.0/8] }
                """
        }
        let probes: [(module: String, target: String, outcome: ProbeResult.Outcome)] = [
            ("web", "127.0.0.1:\(tls.port)", .success), ("bad", "127.0.0.1:\(tls.port)", .failure),
            ("raw", "127.0.0.1:\(tls.port)", .success), ("plain", "http://127.0.0.1:\(http.port)/", .success),
            ("plain", "http://127.0.0.1:\(failing.port)/", .failure), ("banner", "127.0.0.1:\(banner.port)", .success),
            ("other_banner", "127.0.0.1:\(banner.port)", .failure), ("mail", "127.0.0.1:\(smtp.port)", .success),
            ("raw", "127.0.0.1:\(closed)", .failure),
        ]
        var kinds: Set<String> = []
        for probe in probes {
            let (result, log) = try Self.result(await running.probe(probe.module, probe.target))
            #expect(result.outcome == probe.outcome, "\(probe): \(result.message ?? "") \(log)")
            kinds.insert(result.kind.rawValue)
            for seconds in [0.0125, 1.5, 0.000_001, 12.345_678_9] {
                let direct = TargetProbeExposition.render(result, seconds: seconds)
                #expect(direct == Self.throughEndpointSnapshot(result, seconds: seconds), "\(probe)")
                #expect(direct.contains("probe_success \(probe.outcome == .success ? 1 : 0)\n"), "\(direct)")
            }
        }
        #expect(kinds == ["http", "https", "tls", "tcp", "smtp"], "\(kinds)")
        // The results of the route's unit tests too: a target the path cannot reach, a tls:// timeout.
        for result in ProbeRouteTests.results {
            #expect(TargetProbeExposition.render(result, seconds: 0.25) == Self.throughEndpointSnapshot(result, seconds: 0.25))
        }
        await running.stop()
    }
}
