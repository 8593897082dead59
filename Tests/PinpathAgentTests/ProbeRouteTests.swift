import Foundation
import PinpathHTTP
import PinpathTestSupport
import Testing

@testable import PinpathAgent

/// The `/probe` route's pure parts: its query, the scrape timeout header, and the exposition of one probe.
@Suite("/probe query, deadline and exposition")
struct ProbeRouteTests {
    @Test(
        "Queries as Prometheus writes them are read, percent-decoded once, other parameters ignored",
        arguments: [
            ("target=https%3A%2F%2Fexample.com%2Fa%3Fb%3Dc&module=https_2xx", "https://example.com/a?b=c", "https_2xx", false),
            ("module=tls&target=example.com%3A443&debug=true", "example.com:443", "tls", true),
            ("target=example.com:443&module=tls&debug=false&hostname=x&unknown", "example.com:443", "tls", false),
            ("&&target=h%C3%A9llo.example:1&module=a+b&", "héllo.example:1", "a b", false),
            // Names are decoded before they are matched; ignored parameters' values are not decoded at all.
            ("t%61rget=a:1&mod%75le=tls", "a:1", "tls", false),
            ("target=a:1&module=tls&x=%zz&y=%FF&%C3%A9=1", "a:1", "tls", false),
            ("target=a=b:1&module=tls=x", "a=b:1", "tls=x", false),
            ("target=a:1&module=tls&debug=%74rue", "a:1", "tls", true),
            ("é=1&target=h%C3%A9:1&module=m", "hé:1", "m", false),
            // Split on bytes as Go's url.ParseQuery: a combining mark after `&` or `=` does not hide the separator.
            // (Over HTTP, NIO's decoder refuses raw non-ASCII in the request target before the route sees it.)
            ("target=a:1&\u{301}x=1&module=m", "a:1", "m", false),
            ("target=\u{301}a:1&module=m", "\u{301}a:1", "m", false),
        ])
    func readsQuery(query: String, target: String, module: String, debug: Bool) throws {
        let parsed = try ProbeQuery(parsing: Substring(query))
        #expect(parsed.target == target && parsed.module == module && parsed.debug == debug)
    }

    @Test(
        "A malformed query is refused with one line naming the parameter",
        arguments: [
            ("module=tls", "target: missing (add target=… to the query)"),
            ("target=example.com:443", "module: missing (add module=… to the query)"),
            ("target=&module=tls", "target: empty"),
            ("target=a:1&target=b:2&module=tls", "target: given more than once"),
            ("target=a:1&module=tls&module=tcp", "module: given more than once"),
            ("target=a%2:1&module=tls", "target: target has a % not followed by two hexadecimal digits"),
            ("target=a%zz&module=tls", "target: target has a % not followed by two hexadecimal digits"),
            ("target=a:1&module=tls%", "module: module has a % not followed by two hexadecimal digits"),
            ("target=%FF%FE&module=tls", "target: target is not UTF-8 once decoded"),
            ("target=a%0D%0Ab:1&module=tls", "target: target holds a control character"),
            ("target=a%C2%85b:1&module=tls", "target: target holds a control character"),
            ("target=a:1&module=tls&debug=yes", "debug: expected true or false"),
            ("targ%zzet=a:1&module=tls", "a parameter name has a % not followed by two hexadecimal digits"),
            ("target=" + String(repeating: "a", count: 2049) + "&module=tls", "target: longer than 2048 bytes"),
            ("target=a:1&module=" + String(repeating: "m", count: 129), "module: longer than 128 bytes"),
            // A malformed name is refused whatever it names; a repeated parameter before its value is decoded.
            ("x%0A=1&target=a:1&module=tls", "a parameter name holds a control character"),
            ("\u{7F}=1&target=a:1&module=tls", "a parameter name holds a control character"),
            ("%FF=1&target=a:1&module=tls", "a parameter name is not UTF-8 once decoded"),
            ("target&module=tls", "target: empty"),
            ("target=a:1&target=%zz&module=tls", "target: given more than once"),
            ("target=a:1&module=tls&debug=true&debug=false", "debug: given more than once"),
            ("target=a:1&module=tls&debug=%zz", "debug: debug has a % not followed by two hexadecimal digits"),
            ("target=a:1&module=tls&debug=", "debug: expected true or false"),
            ("", "target: missing (add target=… to the query)"),
            ("&&&", "target: missing (add target=… to the query)"),
            ("target=a%2", "target: target has a % not followed by two hexadecimal digits"),
        ])
    func refusesQuery(query: String, reason: String) {
        #expect(throws: ProbeQuery.Problem.self) { try ProbeQuery(parsing: Substring(query)) }
        do {
            _ = try ProbeQuery(parsing: Substring(query))
        } catch {
            #expect(error.description == reason)
            #expect(!error.description.contains("\n"))
        }
    }

    @Test("A query that is a slice of a longer request target is read within its bounds")
    func readsSubstring() throws {
        let requestTarget = "/probe?target=a:1&module=tls#&module=x"
        let start = try #require(requestTarget.firstIndex(of: "?"))
        let end = try #require(requestTarget.firstIndex(of: "#"))
        let parsed = try ProbeQuery(parsing: requestTarget[requestTarget.index(after: start)..<end])
        #expect(parsed.target == "a:1" && parsed.module == "tls" && !parsed.debug)
    }

    @Test("The longest values allowed pass")
    func longestValues() throws {
        let target = String(repeating: "a", count: 2048)
        let module = String(repeating: "m", count: 128)
        #expect(try ProbeQuery(parsing: Substring("target=\(target)&module=\(module)")).target == target)
    }

    @Test(
        "X-Prometheus-Scrape-Timeout-Seconds minus 0.5 s; none, 0 or not above 0.5 leave the module's timeout",
        arguments: [
            (nil, nil), ("10", 9_500_000), ("1.25", 750_000), ("0.75", 250_000), ("0", nil), ("0.5", nil), ("0.2", nil),
            ("1e9", 86_399_500_000), ("120", 119_500_000),
        ] as [(String?, Int64?)])
    func deadline(header: String?, microseconds: Int64?) throws {
        #expect(try ScrapeDeadline.deadline(header: header) == microseconds.map { .microseconds($0) })
    }

    @Test(
        "A timeout header that is not a finite number of seconds, 0 or more, is refused naming the header",
        arguments: ["ten", "", "-1", "NaN", "inf", "1s", " 5"])
    func badDeadline(header: String) {
        #expect(throws: ProbeQuery.Problem(parameter: ScrapeDeadline.header, reason: "expected a number of seconds, 0 or more")) {
            try ScrapeDeadline.deadline(header: header)
        }
    }

    static func timings() -> PhaseTimings {
        var timings = PhaseTimings()
        timings.resolve = 0.0001
        timings.connect = 0.0002
        timings.tls = 0.003
        timings.processing = 0.0004
        timings.transfer = 0.00005
        timings.total = 0.00375
        return timings
    }

    /// Probes as the agent answers them: an https success, a pin mismatch, a target the path cannot reach, a tls://
    /// probe that timed out.
    static let results: [ProbeResult] = [
        ProbeResult(
            endpoint: "", kind: .https, outcome: .success, started: Date(), statusCode: 200, timings: timings(), tlsVersion: "TLSv1.3"),
        ProbeResult(
            endpoint: "", kind: .https, outcome: .failure, started: Date(), timings: timings(), tlsVersion: "TLSv1.3",
            errorCategory: .policyRejected),
        ProbeResult(endpoint: "", kind: .https, outcome: .unreachable, started: Date(), errorCategory: .unreachable),
        ProbeResult(endpoint: "", kind: .tls, outcome: .failure, started: Date(), errorCategory: .timedOut),
    ]

    @Test("One probe's exposition: blackbox's families without an endpoint label, promtool accepts it", arguments: results.indices)
    func exposition(index: Int) throws {
        let result = Self.results[index]
        let text = TargetProbeExposition.render(result, seconds: 0.0125)
        #expect(!text.contains("endpoint="))
        #expect(!text.contains("pinpath_endpoint_state") && !text.contains("pinpath_pin_failures"))
        #expect(text.contains("# TYPE probe_success gauge\nprobe_success \(result.outcome == .success ? 1 : 0)\n"))
        #expect(text.contains("probe_duration_seconds 0.0125\n"))
        if let category = result.errorCategory, result.outcome != .success {
            #expect(text.contains("pinpath_probe_failure_info{category=\"\(category.rawValue)\"} 1\n"))
        } else {
            #expect(!text.contains("pinpath_probe_failure_info{"))
        }
        if result.timings != nil { #expect(text.contains("probe_http_duration_seconds{phase=\"tls\"} 0.003\n")) }
        if result.tlsVersion != nil { #expect(text.contains("probe_tls_version_info{version=\"TLS 1.3\"} 1\n")) }
        let check = try ExpositionReaders.promtoolCheck(text)
        #expect(check.status == 0, "promtool: \(check.stdout)\(check.stderr)\n\(text)")
    }

    @Test("The debug answer: the log lines escaped, then the metrics, in blackbox's layout")
    func debugText() {
        let text = TargetProbeExposition.debugText(
            log: ["connect 127.0.0.1:443", "subject CN=\u{1b}[2Jevil\nline"], exposition: "probe_success 1\n")
        #expect(
            text
                == "Logs for the probe:\nconnect 127.0.0.1:443\nsubject CN=\\x1b[2Jevil\\x0aline\n\n\n\nMetrics that would have been returned:\nprobe_success 1\n"
        )
    }

    @Test("The route's metrics: module labels only from answers about a configured module; promtool accepts them")
    func routeMetrics() throws {
        let metrics = ProbeRouteMetrics()
        #expect(metrics.snapshot() == nil, "no families while the route is not served")
        metrics.startServing()
        #expect(metrics.admit(limit: 2) && metrics.admit(limit: 2))
        #expect(!metrics.admit(limit: 2))
        metrics.release()
        metrics.answered(.probed(Self.results[0], log: nil), module: "https_2xx", seconds: 0.02)
        metrics.answered(.probed(Self.results[1], log: nil), module: "https_2xx", seconds: 0.03)
        metrics.answered(.refused("10.0.0.1 is not in the module's targets"), module: "tls", seconds: 0.001)
        metrics.answered(.invalid("unknown module \"made-up\""), module: "made-up", seconds: 0.001)
        metrics.badRequest()
        var snapshot = MetricsSnapshot()
        snapshot.probeRoute = metrics.snapshot()
        let text = MetricsExposition.render(snapshot)
        for line in [
            #"pinpath_probe_requests_total{module="https_2xx",outcome="success"} 1"#,
            #"pinpath_probe_requests_total{module="https_2xx",outcome="failure"} 1"#,
            #"pinpath_probe_refused_targets_total{module="tls"} 1"#, "pinpath_probe_bad_requests_total 2",
            "pinpath_probe_over_limit_total 1", "pinpath_probe_in_flight 1", "pinpath_probe_request_duration_seconds_count 4",
            #"pinpath_probe_request_duration_seconds_bucket{le="0.025"} 3"#,
        ] {
            #expect(text.contains(line + "\n"), "\(line) missing in\n\(text)")
        }
        #expect(!text.contains("made-up"))
        let check = try ExpositionReaders.promtoolCheck(text)
        #expect(check.status == 0, "promtool: \(check.stdout)\(check.stderr)")
    }
}

@Suite("metrics.probe_max_in_flight")
struct ProbeMaxInFlightConfigurationTests {
    static func load(_ metrics: String) throws -> AgentConfiguration {
        try AgentConfiguration.parse(
            yaml: "reachability: { targets: [127.0.0.1] }\nmetrics:\n  listen: 127.0.0.1:9818\n\(metrics)", file: "pinpath.yaml",
            baseDirectory: "/tmp", environment: [:])
    }

    @Test("64 by default; a whole number from 1 to 4096 is taken; a change asks for a restart")
    func read() throws {
        #expect(try Self.load("").metricsProbeMaxInFlight == 64)
        let eight = try Self.load("  probe_max_in_flight: 8\n")
        #expect(eight.metricsProbeMaxInFlight == 8)
        #expect(try Self.load("  probe_max_in_flight: 4096\n").metricsProbeMaxInFlight == 4096)
        #expect(ConfigurationChange(from: try Self.load(""), to: eight).restartRequired == ["events", "metrics"])
    }

    @Test(
        "One peer's share is all but the last eighth, at least one place left to others unless the limit is 1",
        arguments: [(1, 1), (2, 1), (4, 3), (8, 7), (16, 14), (64, 56), (4096, 3584)])
    func peerShare(limit: Int, share: Int) {
        let route = ProbeRoute(probe: { _ in .invalid("") }, maxInFlight: limit, metrics: ProbeRouteMetrics())
        #expect(route.maxInFlightPerPeer == share)
        let peer = MetricsSlotTable.Peer.address("192.0.2.1")
        for _ in 0..<share { #expect(throws: Never.self) { try route.admit(peer) } }
        #expect(throws: ProbeRoute.Refusal.peerShare) { try route.admit(peer) }
        if limit > share {
            #expect(throws: Never.self) { try route.admit(.address("192.0.2.2")) }
        }
        route.release(peer)
        #expect(throws: Never.self) { try route.admit(peer) }
    }

    @Test("Out of range or not a number: one problem at the key", arguments: ["0", "4097", "-1", "lots", "[1]"])
    func refused(value: String) {
        #expect {
            try Self.load("  probe_max_in_flight: \(value)\n")
        } throws: { error in
            let problems = (error as? ConfigurationError)?.problems ?? []
            return problems.count == 1 && problems[0].keyPath == "metrics.probe_max_in_flight"
                && problems[0].message.contains("a whole number from 1 to 4096")
        }
    }
}
