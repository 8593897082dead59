import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

/// Issue 13, item 3: `report_uri`. `pinpath run` probes an https server on 127.0.0.1 whose key its policy does
/// not pin; the policy's `report_uri` is a recording collector on ::1, held to its own policy (the test roots as
/// its CA file). The collector is real Python https on loopback, answering as each test needs.
@Suite("Pin failure reports to report_uri collectors", .serialized)
struct PinReportDeliveryTests {
    let pki = TestPKI.shared

    /// The agent's events, read from its standard output file.
    struct Events {
        let file: String

        var all: [[String: Any]] {
            let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }

        func of(_ type: String) -> [[String: Any]] { all.filter { $0["event"] as? String == type } }

        /// Waits for the first event of `type`.
        func wait(for type: String, timeout: Duration = .seconds(30)) async throws -> [String: Any] {
            let deadline = ContinuousClock.now + timeout
            while true {
                if let event = of(type).first { return event }
                if ContinuousClock.now >= deadline { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw ShellError(description: "no \(type) within \(timeout); events: \(all.map { $0["event"] as? String ?? "?" })")
        }
    }

    /// A running `pinpath run`, killed when the value goes away unless it was stopped.
    final class RunningAgent {
        let directory: TemporaryDirectory
        let events: Events
        let pid: pid_t
        private var running = true

        init(configuration: String) throws {
            directory = try TemporaryDirectory()
            try configuration.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
            events = Events(file: directory.file("events.jsonl"))
            let output = open(events.file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            let errors = open(directory.file("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            defer {
                close(output)
                close(errors)
            }
            pid = try Shell.spawn([Shell.pinpath, "run", "--config", directory.file("pinpath.yaml")], stdout: output, stderr: errors)
        }

        deinit { if running { Shell.kill(pid) } }

        /// SIGTERM; the exit status, or `nil` when it had to be killed.
        func stop() async throws -> Int32? {
            running = false
            return try await Shell.stop(pid, signal: SIGTERM, timeout: .seconds(8))
        }

        /// Everything it wrote: events and standard error.
        var output: String { (directory.read("events.jsonl") ?? "") + (directory.read("stderr") ?? "") }
    }

    /// A collector on ::1 serving the test PKI's `ip` leaf (names 127.0.0.1 and ::1).
    func collector(failing: (status: Int, count: Int)? = nil) throws -> RecordingServer {
        try RecordingServer(
            address: "::1", certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: pki.directory,
            failing: failing)
    }

    /// The probed server on 127.0.0.1, with the same leaf.
    func probedServer() throws -> RecordingServer {
        try RecordingServer(certificate: (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")]), directory: pki.directory)
    }

    /// The probed server and a collector, for one test.
    struct Servers {
        let probed: RecordingServer
        let collector: RecordingServer

        func stop() {
            probed.stop()
            collector.stop()
        }
    }

    func servers(failing: (status: Int, count: Int)? = nil) throws -> Servers {
        Servers(probed: try probedServer(), collector: try collector(failing: failing))
    }

    func pins(_ names: [String]) throws -> String {
        try pki.chain(names).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
    }

    /// An endpoint on `server` pinned to keys it does not have, reporting to `reportURI`; the collector's host
    /// (::1) held to `collectorPolicy`.
    func configuration(server: RecordingServer, reportURI: String, collectorPolicy: String? = nil) throws -> String {
        """
        events: { probes: all }
        policies:
          pinned:
            mode: public_key
            pins: [\(try pins(["otherinter", "otherroot"]))]
            hosts: ["127.0.0.1"]
            ca_file: \(pki.path("store"))
            report_uri: "\(reportURI)"
          collector: \(collectorPolicy ?? "{ mode: none, hosts: [\"::1\"], ca_file: \(pki.path("store")) }")
        endpoints:
          - { name: api, url: "\(server.origin)/health", interval: 1s, timeout: 900ms }
        """
    }

    @Test("The collector's first answer is 503: the report is tried again and arrives once, as RFC 7469 JSON with the event's fields")
    func deliveredAfterAFailedFirstTry() async throws {
        let servers = try servers(failing: (503, 1))
        defer { servers.stop() }
        let (server, collector) = (servers.probed, servers.collector)
        let agent = try RunningAgent(configuration: try configuration(server: server, reportURI: "\(collector.origin)/pin-failure"))
        let delivered = try await agent.events.wait(for: "report.delivered")
        let status = try await agent.stop()
        #expect(status == 0, "\(agent.output)")

        #expect(delivered["attempts"] as? Int == 2)
        #expect(delivered["status_code"] as? Int == 200)
        #expect(delivered["endpoint"] as? String == "api")
        #expect(delivered["url"] as? String == "\(collector.origin)/pin-failure")
        #expect(delivered["level"] as? String == "info")
        let requests = collector.requests
        #expect(requests.count == 2, "one failed try, one delivery: \(requests.map(\.path))")
        #expect(requests.allSatisfy { $0.method == "POST" && $0.path == "/pin-failure" })
        #expect(requests.last?.header("Content-Type") == "application/json")
        #expect(requests.first?.body == requests.last?.body, "the same report both times")

        let report = try #require(
            try JSONSerialization.jsonObject(with: Data((requests.last?.body ?? "").utf8)) as? [String: Any], "\(requests)")
        #expect(
            Set(report.keys) == [
                "date-time", "hostname", "port", "effective-expiration-date", "include-subdomains", "noted-hostname",
                "served-certificate-chain", "validated-certificate-chain", "known-pins", "enforce-pinning", "validation-result",
            ])
        #expect(report["hostname"] as? String == "127.0.0.1")
        #expect(report["port"] as? Int == Int(server.port))
        #expect(report["validation-result"] as? Int == 1)
        #expect(report["enforce-pinning"] as? Bool == true)
        let expectedPins = try pki.chain(["otherinter", "otherroot"]).map { $0.spkiPin.hpkp }
        #expect(Set(report["known-pins"] as? [String] ?? []) == Set(expectedPins))
        #expect((report["served-certificate-chain"] as? [String])?.first?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
        #expect((report["validated-certificate-chain"] as? [String])?.count == 3)

        // The report is the pin.failure event's report: the same values, field by field, but for the PEMs, which
        // the event carries only with events.include_certificates (the collector gets them always).
        let failures = agent.events.of("pin.failure")
        #expect(failures.count == 1, "identical failures are suppressed, and so not reported again")
        let event = try #require(failures.first)
        let certificateFields: Set = ["served-certificate-chain", "validated-certificate-chain"]
        for (key, value) in report {
            #expect("\(event[key] ?? "absent")" == (certificateFields.contains(key) ? "absent" : "\(value)"), "\(key)")
        }
        #expect((event["served_chain"] as? [Any])?.count == 2)
        #expect(server.requests.isEmpty, "the enforced pin refused the probed server in the handshake")
    }

    @Test("A collector that always fails: one report.delivery_failed after the third try, while probes keep their schedule")
    func deliveryFailedAfterTheLastTry() async throws {
        let servers = try servers(failing: (503, Int.max))
        defer { servers.stop() }
        let (server, collector) = (servers.probed, servers.collector)
        let agent = try RunningAgent(configuration: try configuration(server: server, reportURI: "\(collector.origin)/pin-failure"))
        let failed = try await agent.events.wait(for: "report.delivery_failed")
        let events = agent.events.all
        let status = try await agent.stop()
        #expect(status == 0, "\(agent.output)")

        #expect(failed["attempts"] as? Int == 3)
        #expect(failed["reason"] as? String == "unexpected_status")
        #expect(failed["status_code"] as? Int == 503)
        #expect(failed["level"] as? String == "warning")
        #expect(failed["dropped"] as? Int == 0)
        #expect(collector.requests.count == 3)
        #expect(agent.events.of("report.delivery_failed").count == 1)
        #expect(agent.events.of("report.delivered").isEmpty)
        // Probes went on while the report waited between its tries: completed probes lie between the pin failure
        // and the delivery failure (their order in the output, not their times).
        let names = events.map { $0["event"] as? String ?? "" }
        let pinFailure = try #require(names.firstIndex(of: "pin.failure"))
        let deliveryFailed = try #require(names.firstIndex(of: "report.delivery_failed"))
        #expect(names[pinFailure..<deliveryFailed].filter { $0 == "probe.completed" }.count >= 1, "\(names)")
    }

    @Test("A collector whose certificate fails its own policy is refused in the handshake: nothing reaches it, no new pin.failure")
    func collectorRefusedByItsPolicy() async throws {
        let servers = try servers()
        defer { servers.stop() }
        let (server, collector) = (servers.probed, servers.collector)
        let collectorPolicy =
            "{ mode: public_key, pins: [\(try pins(["otherinter", "otherroot"]))], hosts: [\"::1\"], ca_file: \(pki.path("store")) }"
        let agent = try RunningAgent(
            configuration: try configuration(
                server: server, reportURI: "\(collector.origin)/pin-failure", collectorPolicy: collectorPolicy))
        let failed = try await agent.events.wait(for: "report.delivery_failed")
        try await Task.sleep(for: .milliseconds(500))  // room for a wrongly produced second report to show
        let status = try await agent.stop()
        #expect(status == 0, "\(agent.output)")

        #expect(failed["reason"] as? String == "policy_rejected", "\(failed)")
        #expect(failed["attempts"] as? Int == 1, "a refused collector is not offered the report again")
        #expect(collector.requests.isEmpty, "the collector received \(collector.requests.map(\.path))")
        let failures = agent.events.of("pin.failure")
        #expect(failures.count == 1)
        #expect(failures.allSatisfy { $0["hostname"] as? String == "127.0.0.1" }, "a failed report is not reported")
    }

    @Test("Credentials in the report_uri are used but never shown: not in events, not on standard error")
    func credentialsRedacted() async throws {
        let servers = try servers()
        defer { servers.stop() }
        let (server, collector) = (servers.probed, servers.collector)
        let host = collector.origin.replacingOccurrences(of: "https://", with: "")
        let agent = try RunningAgent(
            configuration: try configuration(
                server: server, reportURI: "https://reporter:pa55word@\(host)/pin-failure?token=t0ken-secret"))
        let delivered = try await agent.events.wait(for: "report.delivered")
        _ = try await agent.stop()

        #expect(delivered["url"] as? String == "\(collector.origin)/pin-failure")
        let received = try #require(collector.requests.first)
        #expect(received.path == "/pin-failure?token=t0ken-secret")
        #expect(received.header("Authorization") == "Basic \(Data("reporter:pa55word".utf8).base64EncodedString())")
        #expect(!agent.output.contains("pa55word"), "the password reached the output")
        #expect(!agent.output.contains("t0ken-secret"), "the token reached the output")
    }

    @Test("SIGTERM while a report waits on a collector that never answers: the agent stops at once, the report is reported lost")
    func shutdownDoesNotWait() async throws {
        let server = try probedServer()
        let silent = try SilentServer()
        defer {
            server.stop()
            silent.stop()
        }
        let agent = try RunningAgent(
            configuration: try configuration(server: server, reportURI: "http://127.0.0.1:\(silent.port)/pin-failure"))
        _ = try await agent.events.wait(for: "pin.failure")
        let status = try await agent.stop()
        #expect(status == 0, "stopped by SIGTERM, not killed: \(agent.output)")
        let failed = try #require(agent.events.of("report.delivery_failed").first, "\(agent.output)")
        #expect(failed["reason"] as? String == "shutdown")
        let names = agent.events.all.map { $0["event"] as? String ?? "" }
        #expect(names.last == "agent.stopping", "\(names)")
    }

    @Test("Reports go through the file's proxy: the collector is reached by a CONNECT tunnel, even for an endpoint probed directly")
    func deliveredThroughTheConfiguredProxy() async throws {
        let servers = try servers()
        defer { servers.stop() }
        let (server, collector) = (servers.probed, servers.collector)
        let proxy = try ProxyServer(directory: pki.directory)
        defer { proxy.stop() }
        let configuration = try configuration(server: server, reportURI: "\(collector.origin)/pin-failure")
            .replacingOccurrences(of: "timeout: 900ms }", with: "timeout: 900ms, proxy: none }")
        let agent = try RunningAgent(configuration: "proxy: \(proxy.url())\n" + configuration)
        let delivered = try await agent.events.wait(for: "report.delivered")
        let status = try await agent.stop()
        #expect(status == 0, "\(agent.output)")

        #expect(delivered["attempts"] as? Int == 1)
        #expect(collector.requests.map(\.method) == ["POST"])
        let tunnels = proxy.requests.filter { $0.method == "CONNECT" }
        #expect(tunnels.count == 1 && tunnels.allSatisfy { $0.target.hasSuffix(":\(collector.port)") }, "\(proxy.requests)")
        #expect(!proxy.requests.contains { $0.target.hasSuffix(":\(server.port)") }, "the endpoint's proxy: none keeps its probes direct")
    }

    @Test("An https proxy refused by its own pins is not the endpoint's pin failure: no pin.failure or report; the probe names the proxy")
    func refusedProxyIsNotTheEndpointsPinFailure() async throws {
        let leaf = (pki.path("ip"), pki.path("ip", "key"), [pki.path("inter")])
        let origin = try RecordingServer(address: "::1", certificate: leaf, directory: pki.directory)
        let collector = try collector()
        let proxy = try ProxyServer(mode: .https(leaf: leaf.0, key: leaf.1, chain: leaf.2), directory: pki.directory)
        defer {
            origin.stop()
            collector.stop()
            proxy.stop()
        }
        let agent = try RunningAgent(
            configuration: """
                events: { probes: all }
                proxy: \(proxy.url())
                policies:
                  proxy-host:
                    { mode: public_key, pins: [\(try pins(["otherinter", "otherroot"]))], hosts: ["127.0.0.1"], ca_file: \(pki.path("store")) }
                  origin:
                    mode: public_key
                    pins: [\(try pins(["inter", "root"]))]
                    hosts: ["::1"]
                    ca_file: \(pki.path("store"))
                    report_uri: "\(collector.origin)/pin-failure"
                endpoints:
                  - { name: api, url: "\(origin.origin)/health", interval: 1s, timeout: 900ms }
                """)
        let deadline = ContinuousClock.now + .seconds(20)
        while agent.events.of("probe.completed").count < 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let status = try await agent.stop()
        #expect(status == 0, "\(agent.output)")

        let probes = agent.events.of("probe.completed")
        #expect(probes.count >= 3, "\(agent.output)")
        for probe in probes {
            #expect(probe["error_category"] as? String == "policy_rejected", "\(probe)")
            #expect((probe["message"] as? String)?.contains("the proxy \(proxy.url())") == true, "\(probe)")
        }
        let names = agent.events.all.compactMap { $0["event"] as? String }
        #expect(!names.contains("pin.failure") && !names.contains { $0.hasPrefix("report.") }, "\(names)")
        #expect(collector.requests.isEmpty && origin.requests.isEmpty)
    }
}
