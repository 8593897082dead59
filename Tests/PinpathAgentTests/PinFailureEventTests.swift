import Foundation
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// Issue 31, item 8: lighter events. `pinpath run --once` probes an `openssl s_server` on 127.0.0.1 serving the
/// test PKI's two-certificate chain (`CN=Loopback`, then `CN=Pinpath Test Intermediate`) under a policy whose
/// pins are another CA's; the events are read from the agent's standard output, as journald would get them.
@Suite("pinpath run: a pin failure's events")
struct PinFailureEventTests {
    let pki = TestPKI.shared

    /// What one `run --once` wrote: each line as written, and as JSON.
    struct Output {
        let lines: [Substring]
        let events: [[String: Any]]

        func of(_ type: String) -> [[String: Any]] { events.filter { $0["event"] as? String == type } }

        /// The line of the only event of `type`.
        func line(of type: String) throws -> Substring {
            let matching = lines.filter { $0.contains("\"event\":\"\(type)\"") }
            try #require(matching.count == 1, "\(matching.count) \(type) lines")
            return matching[0]
        }
    }

    /// Runs the agent once against a server whose chain its pins do not match.
    /// - Parameter events: the `events:` mapping's extra keys, such as `include_certificates: true`.
    func runOnce(events: String = "") throws -> Output {
        let directory = try TemporaryDirectory()
        let server = try TLSServer(
            certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: directory.path)
        defer { server.stop() }
        let pins = try pki.chain(["otherinter", "otherroot"]).map { "\"\($0.spkiPin)\"" }.joined(separator: ", ")
        try """
        events: { probes: changes\(events.isEmpty ? "" : ", \(events)") }
        policies:
          pinned: { mode: public_key, pins: [\(pins)], ca_file: \(pki.path("store")) }
        endpoints:
          - { name: api, url: "https://127.0.0.1:\(server.port)/", policy: pinned, timeout: 5s }

        """.write(toFile: directory.file("pinpath.yaml"), atomically: true, encoding: .utf8)
        let result = try Shell.run([Shell.pinpath, "run", "--once", "--config", directory.file("pinpath.yaml")])
        #expect(result.status == 1, "the endpoint is down: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        let events = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)") }
        return Output(lines: lines, events: events)
    }

    /// Every string in `value`, at any depth.
    static func strings(in value: Any) -> [String] {
        switch value {
        case let text as String: return [text]
        case let array as [Any]: return array.flatMap(strings(in:))
        case let object as [String: Any]: return object.values.flatMap(strings(in:))
        default: return []
        }
    }

    @Test(
        """
        The full account (each certificate's pin and subject, then the pins expected) is written once, in pin.failure; \
        probe.completed and endpoint.state_changed's probe carry the same one line pointing to it
        """)
    func messageOnce() throws {
        let output = try runOnce()
        let failure = try #require(output.of("pin.failure").first)
        let account = try #require(failure["message"] as? String)
        #expect(account.contains("Peer certificate chain:") && account.contains("Pinned certificates for 127.0.0.1:"), "\(account)")
        // Whatever field it would be in, at any depth: the account's lines occur in one string of one event.
        let carriers = output.events.flatMap { Self.strings(in: $0) }.filter { $0.contains("Pinned certificates for") }
        #expect(carriers == [account], "\(carriers)")

        let completed = try #require(output.of("probe.completed").first)
        let changed = try #require(output.of("endpoint.state_changed").first)
        let nested = try #require(changed["probe"] as? [String: Any])
        #expect(changed["state"] as? String == "down")
        for probe in [completed, nested] {
            #expect(probe["error_category"] as? String == "policy_rejected")
            let message = try #require(probe["message"] as? String)
            #expect(!message.contains("\n"), "one line: \(message)")
            #expect(
                message.hasSuffix(
                    "127.0.0.1: certificate pinning failure: the verified chain matched none of the 2 pins (see pin.failure)"),
                "\(message)")
        }
        #expect(completed["message"] as? String == nested["message"] as? String, "the same words for the same failure")
    }

    @Test("pin.failure for a two-certificate chain is under 1.5 KB: subjects, pins and dates, no PEM")
    func smallByDefault() throws {
        let output = try runOnce()
        let line = try output.line(of: "pin.failure")
        print("pin.failure, two served certificates, default: \(line.utf8.count + 1) bytes with its newline")
        #expect(line.utf8.count + 1 < 1500, "\(line)")
        #expect(!output.lines.contains { $0.contains("BEGIN CERTIFICATE") }, "no PEM in any event")

        let failure = try #require(output.of("pin.failure").first)
        #expect(failure["served-certificate-chain"] == nil && failure["validated-certificate-chain"] == nil)
        #expect((failure["known-pins"] as? [String])?.count == 2)
        let served = try #require(failure["served_chain"] as? [[String: Any]])
        #expect(served.map { $0["subject"] as? String } == ["CN=Loopback", "CN=Pinpath Test Intermediate"])
        // The pins as openssl computes them, independently of pinpath's code.
        #expect(served.map { $0["pin"] as? String } == ["sha256/\(try pki.opensslPin("ip"))", "sha256/\(try pki.opensslPin("inter"))"])
        #expect(served.allSatisfy { ($0["not_after"] as? String)?.hasSuffix("Z") == true })
        // The validated chain, rebuilt to the trusted root, is the account's: each certificate's pin and subject.
        let account = try #require(failure["message"] as? String)
        for (name, subject) in [("ip", "CN=Loopback"), ("inter", "CN=Pinpath Test Intermediate"), ("root", "CN=Pinpath Test Root")] {
            #expect(account.contains("\n    sha256/\(try pki.opensslPin(name)): \(subject)\n"), "\(name): \(account)")
        }

        // probe.completed's served chain is the same summary.
        let completed = try #require(output.of("probe.completed").first)
        #expect((completed["served_chain"] as? [[String: Any]])?.map { $0["pin"] as? String } == served.map { $0["pin"] as? String })
    }

    @Test("events.include_certificates: true adds RFC 7469's PEM arrays to pin.failure, and only there")
    func certificatesIncluded() throws {
        let lean = try runOnce()
        let full = try runOnce(events: "include_certificates: true")
        let leanLine = try lean.line(of: "pin.failure")
        let fullLine = try full.line(of: "pin.failure")
        print("pin.failure, two served certificates: \(leanLine.utf8.count + 1) bytes, \(fullLine.utf8.count + 1) with the PEMs")
        #expect(fullLine.utf8.count > leanLine.utf8.count)

        let failure = try #require(full.of("pin.failure").first)
        let pem = { (name: String) in try String(contentsOfFile: pki.path(name), encoding: .utf8) }
        #expect(failure["served-certificate-chain"] as? [String] == [try pem("ip"), try pem("inter")])
        #expect(failure["validated-certificate-chain"] as? [String] == [try pem("ip"), try pem("inter"), try pem("root")])
        #expect(failure["served_chain"] != nil)
        // The other events stay as they are: the PEMs are pin.failure's.
        #expect(full.lines.filter { $0.contains("BEGIN CERTIFICATE") }.count == 1)
        let carriers = full.events.flatMap { Self.strings(in: $0) }.filter { $0.contains("Pinned certificates for") }
        #expect(carriers.count == 1)
    }

    /// Writes `text` as a configuration file and runs `check-config` on it, as text and as JSON.
    func checkConfig(_ text: String) throws -> (text: Shell.Result, json: Shell.Result, file: String, directory: TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        let file = directory.file("pinpath.yaml")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return (
            try Shell.run([Shell.pinpath, "check-config", "--config", file]),
            try Shell.run([Shell.pinpath, "check-config", "--json", "--config", file]), file, directory
        )
    }

    @Test("check-config shows events.include_certificates, in the summary and in --json", arguments: [nil, false, true])
    func checkConfigShowsIt(include: Bool?) throws {
        let (text, json, _, directory) = try checkConfig(
            "events:\n  probes: all\n" + (include.map { "  include_certificates: \($0)\n" } ?? ""))
        _ = directory
        #expect(text.status == 0, "\(text.stderr)")
        let shown = include == true ? "subject, pin and PEM" : "subject and pin"
        #expect(text.stdout.contains("\nevents:    stdout, probe results: all, certificates: \(shown)\n"), "\(text.stdout)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let events = try #require(object["events"] as? [String: Any])
        #expect(events["include_certificates"] as? Bool == (include ?? false))
    }

    @Test("include_certificates: maybe is refused with its position, exit 78")
    func badValue() throws {
        let (text, json, file, directory) = try checkConfig("events:\n  include_certificates: maybe\n")
        _ = directory
        #expect(text.status == 78)
        #expect(text.stdout.isEmpty)
        #expect(text.stderr == "pinpath: error: \(file):2:25: events.include_certificates: expected true or false, found \"maybe\"\n")
        #expect(json.status == 78)
        #expect(json.stdout.contains("events.include_certificates"), "\(json.stdout)")
    }
}

/// ``AgentEvents/probeMessage(_:)`` on evaluations made by the security policy with the test PKI's chains.
@Suite("Probe messages point to pin.failure")
struct ProbeMessageTests {
    let pki = TestPKI.shared

    /// The `ip` leaf and the intermediate, evaluated under pins of another CA, enforced or report-only.
    func evaluation(enforce: Bool) throws -> TrustEvaluation {
        let pins = try pki.chain(["otherinter", "otherroot"]).map(\.spkiPin)
        return try SecurityPolicy(mode: .publicKey, pins: pins, enforce: enforce).evaluate(
            servedChain: try pki.chain(["ip", "inter"]), host: "127.0.0.1", trustStore: try pki.trustStore())
    }

    @Test("The account is replaced by one line; what the request core said before and after it stays")
    func accountReplaced() throws {
        let evaluation = try evaluation(enforce: true)
        let account = try #require(evaluation.failure?.message)
        var result = ProbeResult(endpoint: "mail", outcome: .failure, started: Date())
        result.evaluation = evaluation
        result.errorCategory = .policyRejected
        result.message = "SMTP smtp://127.0.0.1:2525/: \(account); in plaintext only the greeting and EHLO were exchanged"
        #expect(
            AgentEvents.probeMessage(result)
                == "SMTP smtp://127.0.0.1:2525/: 127.0.0.1: certificate pinning failure: the verified chain matched none of the 2 "
                + "pins (see pin.failure); in plaintext only the greeting and EHLO were exchanged")
    }

    @Test("A report-only mismatch lets the probe through: its message, about something else, is left alone")
    func reportOnlyUntouched() throws {
        var result = ProbeResult(endpoint: "api", outcome: .failure, started: Date())
        result.evaluation = try evaluation(enforce: false)
        result.errorCategory = .unexpectedStatus
        result.message = "status 503, expected 200-299"
        #expect(AgentEvents.probeMessage(result) == "status 503, expected 200-299")
    }
}

/// `events.include_certificates` and `events.probes` are read for each result: a reload applies them at once.
@Suite("Reloading the events settings")
struct EventsReloadTests {
    @Test(
        "Only the output and its rotation wait for a restart",
        arguments: [
            ("include_certificates: true", []), ("probes: all", []), ("output: /tmp/events.jsonl", ["events", "metrics"]),
            ("keep: 2", ["events", "metrics"]),
        ])
    func restartRequired(changed: String, expected: [String]) throws {
        let old = try loadConfiguration("events: {}\n")
        let new = try loadConfiguration("events: { \(changed) }\n")
        #expect(ConfigurationChange(from: old, to: new).restartRequired == expected, "\(changed)")
    }
}

/// What a server chooses (its chain's length, its names) against the size of `pin.failure`.
@Suite("pin.failure's certificate summary is bounded")
struct PinFailureBoundTests {
    let pki = TestPKI.shared

    @Test("ATTACK: a served chain of 40 certificates with a pin mismatch puts at most 10 into served_chain, and no PEM")
    func servedChainBounded() throws {
        let pins = try pki.chain(["otherinter", "otherroot"]).map(\.spkiPin)
        let evaluation = try SecurityPolicy(mode: .publicKey, pins: pins).evaluate(
            servedChain: try pki.chain(["ip"] + Array(repeating: "inter", count: 39)), host: "127.0.0.1",
            trustStore: try pki.trustStore())
        #expect(evaluation.failure?.reason == .pinMismatch)
        let endpoint = try #require(try loadConfiguration("endpoints:\n  - { name: api, url: \"https://127.0.0.1/\" }\n").endpoints.first)
        let lean = AgentEvents.pinFailure(endpoint, evaluation, suppressed: 0, connectivity: nil, includeCertificates: false)
        guard case .array(let chain)? = lean.fields.first(where: { $0.0 == "served_chain" })?.1 else {
            Issue.record("no served_chain array: \(lean.fields)")
            return
        }
        #expect(chain.count == AgentEvents.servedChainLimit)
        #expect(!lean.fields.contains { AgentEvents.certificateReportFields.contains($0.0) })
        // Asked for, the PEMs are the report's: every certificate the handshake accepted.
        let full = AgentEvents.pinFailure(endpoint, evaluation, suppressed: 0, connectivity: nil, includeCertificates: true)
        #expect(full.fields.first { $0.0 == "served-certificate-chain" }.map { "\($0.1)" }?.contains("BEGIN CERTIFICATE") == true)
    }
}
