import Foundation
import PinpathSupport
import PinpathTestSupport
import Testing

@testable import PinpathAgent

@Suite("Metrics exposition")
struct MetricsExpositionTests {
    static var snapshot: MetricsSnapshot {
        var snapshot = MetricsSnapshot(endpoints: [
            MetricsSnapshot.Endpoint(
                name: "api", probeSucceeded: true, probeDuration: 0.02,
                phaseDurations: [("resolve", 0.0005), ("connect", 0.002), ("tls", 0.0125)], statusCode: 200, tlsVersion: "TLSv1.3",
                state: .up, earliestCertificateExpiry: 1_800_000_000, lastChainExpiry: 1_790_000_000, enforcedPinFailures: 3,
                reportOnlyPinFailures: 1),
            MetricsSnapshot.Endpoint(name: #"odd "name"\"#, probeSucceeded: nil, state: .unknown),
        ])
        snapshot.pathStatus = .reachable
        snapshot.targets = [("api.example", true), ("10.0.0.1", false)]
        snapshot.eventsDropped = [("queue_full", 7), ("write_failed", 2)]
        snapshot.probes = 12
        snapshot.lateness.observe(0.003)
        snapshot.lateness.observe(0.2)
        snapshot.textfileWriteFailures = 1
        snapshot.buildLabels = [("version", "9.9.9")]
        return snapshot
    }

    @Test("Prometheus text: blackbox_exporter's names, HELP and TYPE per family, labels escaped, no timestamps")
    func render() {
        let text = MetricsExposition.render(Self.snapshot)
        let odd = #"endpoint="odd \"name\"\\""#
        #expect(
            text == """
                # HELP probe_success Whether the endpoint's last probe succeeded.
                # TYPE probe_success gauge
                probe_success{endpoint="api"} 1
                # HELP probe_duration_seconds Duration of the endpoint's last probe, all phases.
                # TYPE probe_duration_seconds gauge
                probe_duration_seconds{endpoint="api"} 0.02
                # HELP probe_http_duration_seconds Duration of each phase of the endpoint's last probe.
                # TYPE probe_http_duration_seconds gauge
                probe_http_duration_seconds{endpoint="api",phase="resolve"} 0.0005
                probe_http_duration_seconds{endpoint="api",phase="connect"} 0.002
                probe_http_duration_seconds{endpoint="api",phase="tls"} 0.0125
                # HELP probe_http_status_code The last probe's HTTP status code; 0 without a response.
                # TYPE probe_http_status_code gauge
                probe_http_status_code{endpoint="api"} 200
                # HELP probe_ssl_earliest_cert_expiry Earliest expiry of the certificates served, in Unix time.
                # TYPE probe_ssl_earliest_cert_expiry gauge
                probe_ssl_earliest_cert_expiry{endpoint="api"} 1800000000
                # HELP probe_ssl_last_chain_expiry_timestamp_seconds Earliest expiry in the verified chain, in Unix time.
                # TYPE probe_ssl_last_chain_expiry_timestamp_seconds gauge
                probe_ssl_last_chain_expiry_timestamp_seconds{endpoint="api"} 1790000000
                # HELP probe_tls_version_info The TLS version the last probe negotiated.
                # TYPE probe_tls_version_info gauge
                probe_tls_version_info{endpoint="api",version="TLS 1.3"} 1
                # HELP pinpath_endpoint_state The endpoint's state: 1 for the current one.
                # TYPE pinpath_endpoint_state gauge
                pinpath_endpoint_state{endpoint="api",state="unknown"} 0
                pinpath_endpoint_state{endpoint="api",state="up"} 1
                pinpath_endpoint_state{endpoint="api",state="down"} 0
                pinpath_endpoint_state{endpoint="api",state="unreachable"} 0
                pinpath_endpoint_state{\(odd),state="unknown"} 1
                pinpath_endpoint_state{\(odd),state="up"} 0
                pinpath_endpoint_state{\(odd),state="down"} 0
                pinpath_endpoint_state{\(odd),state="unreachable"} 0
                # HELP pinpath_probe_failure_info Why the endpoint's last probe failed: 1 with its category; absent after a success.
                # TYPE pinpath_probe_failure_info gauge
                # HELP pinpath_pin_failures_total Pin validation failures since the agent started.
                # TYPE pinpath_pin_failures_total counter
                pinpath_pin_failures_total{endpoint="api",enforced="true"} 3
                pinpath_pin_failures_total{endpoint="api",enforced="false"} 1
                pinpath_pin_failures_total{\(odd),enforced="true"} 0
                pinpath_pin_failures_total{\(odd),enforced="false"} 0
                # HELP pinpath_reachability_status The network path's status: 1 for the current one.
                # TYPE pinpath_reachability_status gauge
                pinpath_reachability_status{status="reachable"} 1
                pinpath_reachability_status{status="unreachable"} 0
                # HELP pinpath_target_reachable Whether a watched host can be reached from here.
                # TYPE pinpath_target_reachable gauge
                pinpath_target_reachable{target="api.example"} 1
                pinpath_target_reachable{target="10.0.0.1"} 0
                # HELP pinpath_events_dropped_total Event lines the agent dropped, by reason.
                # TYPE pinpath_events_dropped_total counter
                pinpath_events_dropped_total{reason="queue_full"} 7
                pinpath_events_dropped_total{reason="write_failed"} 2
                # HELP pinpath_probes_total Probe results recorded since the agent started.
                # TYPE pinpath_probes_total counter
                pinpath_probes_total 12
                # HELP pinpath_probe_lateness_seconds How late probes started against their schedule.
                # TYPE pinpath_probe_lateness_seconds histogram
                pinpath_probe_lateness_seconds_bucket{le="0.001"} 0
                pinpath_probe_lateness_seconds_bucket{le="0.005"} 1
                pinpath_probe_lateness_seconds_bucket{le="0.01"} 1
                pinpath_probe_lateness_seconds_bucket{le="0.025"} 1
                pinpath_probe_lateness_seconds_bucket{le="0.05"} 1
                pinpath_probe_lateness_seconds_bucket{le="0.1"} 1
                pinpath_probe_lateness_seconds_bucket{le="0.25"} 2
                pinpath_probe_lateness_seconds_bucket{le="0.5"} 2
                pinpath_probe_lateness_seconds_bucket{le="1"} 2
                pinpath_probe_lateness_seconds_bucket{le="2.5"} 2
                pinpath_probe_lateness_seconds_bucket{le="5"} 2
                pinpath_probe_lateness_seconds_bucket{le="10"} 2
                pinpath_probe_lateness_seconds_bucket{le="+Inf"} 2
                pinpath_probe_lateness_seconds_sum 0.203
                pinpath_probe_lateness_seconds_count 2
                # HELP pinpath_metrics_write_failures_total Failed writes of the metrics textfile.
                # TYPE pinpath_metrics_write_failures_total counter
                pinpath_metrics_write_failures_total 1
                # HELP pinpath_metrics_auth_failures_total Requests the metrics listener refused for their credentials (metrics.basic_auth), by reason.
                # TYPE pinpath_metrics_auth_failures_total counter
                pinpath_metrics_auth_failures_total{reason="missing"} 0
                pinpath_metrics_auth_failures_total{reason="wrong"} 0
                # HELP pinpath_build_info The agent's build: always 1, the labels say which.
                # TYPE pinpath_build_info gauge
                pinpath_build_info{version="9.9.9"} 1

                """)
    }

    @Test("pinpath_probe_failure_info: one sample with the category while the last probe failed, none after a success")
    func failureCategory() {
        let failed = MetricsSnapshot.Endpoint(
            name: "billing", probeSucceeded: false, probeDuration: 0.004, tlsVersion: "TLSv1.3", failureCategory: .tlsExpired,
            state: .down)
        let recovered = MetricsSnapshot.Endpoint(name: "api", probeSucceeded: true, failureCategory: nil, state: .up)
        let text = MetricsExposition.render(MetricsSnapshot(endpoints: [failed, recovered]))
        let samples = text.split(separator: "\n").filter { $0.hasPrefix("pinpath_probe_failure_info{") }
        #expect(samples == [#"pinpath_probe_failure_info{endpoint="billing",category="tls_expired"} 1"#])
        // A failed probe that reached TLS keeps its duration and version.
        #expect(text.contains(#"probe_duration_seconds{endpoint="billing"} 0.004"#))
        #expect(text.contains(#"probe_tls_version_info{endpoint="billing",version="TLS 1.3"} 1"#))
    }

    @Test("OpenMetrics: counter families named without _total, samples with it, # EOF last")
    func openMetrics() {
        let text = MetricsExposition.render(Self.snapshot, format: .openMetrics)
        #expect(text.contains("# TYPE pinpath_pin_failures counter\npinpath_pin_failures_total{endpoint=\"api\",enforced=\"true\"} 3\n"))
        #expect(text.contains("# TYPE pinpath_probes counter\npinpath_probes_total 12\n"))
        #expect(text.contains("# TYPE probe_success gauge\n"))
        #expect(text.hasSuffix("pinpath_build_info{version=\"9.9.9\"} 1\n# EOF\n"))
        #expect(!MetricsExposition.render(Self.snapshot).contains("# EOF"))
    }

    @Test(
        "Accept chooses the format; OpenMetrics only when named and not refused with q=0",
        arguments: [
            (nil, MetricsExposition.Format.prometheus), ("*/*", .prometheus), ("text/plain", .prometheus),
            (
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                    + "text/plain;version=0.0.4;q=0.5,*/*;q=0.1", .openMetrics
            ),
            ("Application/OpenMetrics-Text", .openMetrics), ("application/openmetrics-text; q=0", .prometheus),
        ] as [(String?, MetricsExposition.Format)])
    func negotiation(accept: String?, format: MetricsExposition.Format) {
        #expect(MetricsExposition.Format(accept: accept) == format)
        #expect(format.contentType.hasPrefix(format == .openMetrics ? "application/openmetrics-text" : "text/plain; version=0.0.4"))
    }

    @Test("Readiness: a path snapshot, and a first result for every endpoint (a probe, or the path's verdict)")
    func readiness() {
        var snapshot = MetricsSnapshot(endpoints: [MetricsSnapshot.Endpoint(name: "a", probeSucceeded: nil, state: .unknown)])
        #expect(!snapshot.isReady)
        snapshot.pathStatus = .unreachable
        #expect(!snapshot.isReady)
        snapshot.endpoints[0].state = .unreachable
        #expect(snapshot.isReady)
        snapshot.endpoints.append(MetricsSnapshot.Endpoint(name: "b", probeSucceeded: false, state: .unknown))
        #expect(snapshot.isReady)
    }

    @Test(
        "Values in the text format's spelling",
        arguments: [
            (1.0, "1"), (0.25, "0.25"), (1e-7, "1e-07"), (-3.0, "-3"), (.infinity, "+Inf"), (-.infinity, "-Inf"),
            (.nan, "NaN"), (1e20, "1e+20"),
        ] as [(Double, String)])
    func format(value: Double, text: String) {
        #expect(MetricsExposition.format(value) == text)
    }

    @Test(
        "Sample values: whole millionths written digit by digit, the same text as Swift's own for other values",
        arguments: [
            (0.000001, "0.000001"), (1.5, "1.5"), (-0.25, "-0.25"), (123.456789, "123.456789"), (0.1 + 0.2, "0.30000000000000004"),
            (1e-7, "1e-07"), (2_366_841_600, "2366841600"), (0.0125, "0.0125"),
        ] as [(Double, String)])
    func sampleValue(value: Double, text: String) {
        let snapshot = MetricsSnapshot(endpoints: [.init(name: "a", probeSucceeded: true, probeDuration: value, state: .up)])
        #expect(MetricsExposition.render(snapshot).contains("\nprobe_duration_seconds{endpoint=\"a\"} \(text)\n"))
    }

    @Test("Label values escape backslash, quote and newline")
    func escape() {
        #expect(MetricsExposition.escape("a\\b\"c\nd é") == #"a\\b\"c\nd é"#)
        #expect(MetricsExposition.escape("plain") == "plain")
    }

    /// A combining mark makes one `Character` of the quote or backslash before it, and CR LF is one too: the
    /// escaping works on bytes, as the exposition format defines it.
    @Test(
        "Label values are escaped byte by byte, whatever the graphemes",
        arguments: [
            ("q\"\u{301}", "q\\\"\u{301}"), ("b\\\u{301}", "b\\\\\u{301}"), ("\r\n", "\r\\n"),
            ("\"\u{301}\u{302}\\", "\\\"\u{301}\u{302}\\\\"),
            ("🇫🇷\"", "🇫🇷\\\""), ("line\u{2028}sep", "line\u{2028}sep"),
        ] as [(String, String)])
    func escapeBytes(value: String, escaped: String) {
        // Bytes, not Strings: String equality and `contains` treat canonically equivalent text as the same.
        #expect(Array(MetricsExposition.escape(value).utf8) == Array(escaped.utf8))
        let snapshot = MetricsSnapshot(endpoints: [.init(name: value, probeSucceeded: true, probeDuration: 1, state: .up)])
        let sample = Array("\nprobe_success{endpoint=\"\(escaped)\"} 1\n".utf8)
        #expect(Array(MetricsExposition.render(snapshot).utf8).firstRange(of: sample) != nil)
    }

    @Test("The textfile is replaced through a rename: no temporary file is left, the old one is whole until then")
    func write() throws {
        let directory = try TemporaryDirectory()
        let metrics = TextfileMetrics(path: directory.file("pinpath.prom"))
        try metrics.write("first 1\n")
        try metrics.write("second 2\n")
        #expect(directory.read("pinpath.prom") == "second 2\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["pinpath.prom"])
        #expect { try TextfileMetrics(path: directory.file("missing/pinpath.prom")).write("x 1\n") } throws: { error in
            (error as? SystemCallError)?.errno == ENOENT
        }
    }

    @Test(
        "metrics.listen: addresses, IPv6 in brackets, absolute Unix socket paths",
        arguments: [
            ("127.0.0.1:9818", MetricsListenAddress.tcp(host: "127.0.0.1", port: 9818)),
            ("[::1]:9818", .tcp(host: "::1", port: 9818)), ("0.0.0.0:1", .tcp(host: "0.0.0.0", port: 1)),
            ("/run/pinpath/metrics.sock", .unix(path: "/run/pinpath/metrics.sock")),
        ])
    func listenAddress(text: String, address: MetricsListenAddress) throws {
        #expect(try MetricsListenAddress(parsing: text) == address)
        #expect(address.description == text)
    }

    @Test(
        "metrics.listen: what is wrong is said",
        arguments: [
            ("9818", "has no port"), ("localhost:9818", "is not an IP address"), ("127.0.0.1:0", "is not a port"),
            ("127.0.0.1:65536", "is not a port"), ("127.0.0.1:http", "is not a port"), ("::1:9818", "needs brackets"),
            ("[127.0.0.1]:9818", "is not an IPv6 address"), ("run/metrics.sock", "has no port"),
            ("/" + String(repeating: "a", count: 120), "at most 107"), ("/run/pinpath/", "names a directory"),
            ("127.0.0.1:", "is not a port"), ("300.0.0.1:9818", "is not an IP address"),
        ])
    func badListenAddress(text: String, message: String) {
        #expect { try MetricsListenAddress(parsing: text) } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test("Target probes' pin failures close pinpath_pin_failures_total, labelled by module (never by target), escaped")
    func targetPinFailuresByModule() {
        var snapshot = Self.snapshot
        snapshot.targetPinFailures = [("web", 2, 0), (#"odd "module""#, 0, 1)]
        let text = MetricsExposition.render(snapshot)
        let family = text.split(separator: "\n").filter { $0.hasPrefix("pinpath_pin_failures_total") }
        #expect(
            Array(family.suffix(4)) == [
                #"pinpath_pin_failures_total{module="web",enforced="true"} 2"#,
                #"pinpath_pin_failures_total{module="web",enforced="false"} 0"#,
                #"pinpath_pin_failures_total{module="odd \"module\"",enforced="true"} 0"#,
                #"pinpath_pin_failures_total{module="odd \"module\"",enforced="false"} 1"#,
            ], "\(family)")
        #expect(text.components(separatedBy: "# TYPE pinpath_pin_failures_total counter").count == 2, "one family header")
    }
}
