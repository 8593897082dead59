import Foundation
import Testing

@testable import PinpathAgent

@Suite("Textfile metrics")
struct TextfileMetricsTests {
    static let endpoints = [
        TextfileMetrics.Endpoint(
            name: "api", probeSucceeded: true,
            phaseDurations: [("resolve", 0.0005), ("connect", 0.002), ("tls", 0.0125)], state: .up,
            earliestCertificateExpiry: 1_800_000_000, lastChainExpiry: 1_790_000_000, pinFailures: 3),
        TextfileMetrics.Endpoint(name: #"odd "name"\"#, probeSucceeded: nil, state: .unknown),
    ]

    @Test("Prometheus text: HELP and TYPE per family, labels escaped, no timestamps")
    func render() {
        let text = TextfileMetrics.render(endpoints: Self.endpoints, eventsDroppedTotal: 7)
        let odd = #"endpoint="odd \"name\"\\""#
        #expect(
            text == """
                # HELP pinpath_probe_success Whether the endpoint's last probe succeeded.
                # TYPE pinpath_probe_success gauge
                pinpath_probe_success{endpoint="api"} 1
                # HELP pinpath_probe_duration_seconds Duration of each phase of the endpoint's last probe.
                # TYPE pinpath_probe_duration_seconds gauge
                pinpath_probe_duration_seconds{endpoint="api",phase="resolve"} 0.0005
                pinpath_probe_duration_seconds{endpoint="api",phase="connect"} 0.002
                pinpath_probe_duration_seconds{endpoint="api",phase="tls"} 0.0125
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
                # HELP pinpath_ssl_earliest_cert_expiry Earliest expiry of the certificates served, in Unix time.
                # TYPE pinpath_ssl_earliest_cert_expiry gauge
                pinpath_ssl_earliest_cert_expiry{endpoint="api"} 1800000000
                # HELP pinpath_ssl_last_chain_expiry_timestamp_seconds Earliest expiry in the verified chain, in Unix time.
                # TYPE pinpath_ssl_last_chain_expiry_timestamp_seconds gauge
                pinpath_ssl_last_chain_expiry_timestamp_seconds{endpoint="api"} 1790000000
                # HELP pinpath_pin_failures_total Pin validation failures since the agent started.
                # TYPE pinpath_pin_failures_total counter
                pinpath_pin_failures_total{endpoint="api"} 3
                pinpath_pin_failures_total{\(odd)} 0
                # HELP pinpath_events_dropped_total Event lines the agent dropped (queue full or output failing).
                # TYPE pinpath_events_dropped_total counter
                pinpath_events_dropped_total 7

                """)
    }

    @Test(
        "Values in the text format's spelling",
        arguments: [
            (1.0, "1"), (0.25, "0.25"), (1e-7, "1e-07"), (-3.0, "-3"), (.infinity, "+Inf"), (-.infinity, "-Inf"),
            (.nan, "NaN"), (1e20, "1e+20"),
        ] as [(Double, String)])
    func format(value: Double, text: String) {
        #expect(TextfileMetrics.format(value) == text)
    }

    @Test("Label values escape backslash, quote and newline")
    func escape() {
        #expect(TextfileMetrics.escape("a\\b\"c\nd é") == #"a\\b\"c\nd é"#)
    }

    @Test("The file is replaced through a rename: no temporary file is left, the old one is whole until then")
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
}
