import Foundation

/// The soak's servers and the agent configuration that probes them (see ``Soak``).
final class SoakScene {
    /// Each endpoint and the `error_category` values its probes may end with (`success` for none).
    private(set) var expected: [String: Set<String>] = [:]
    private(set) var healthyCount = 0
    private(set) var configurationYAML = ""
    private var tlsServer: TLSServer?
    private var httpbin: HTTPBinServer?
    private var hostile: HostileAgentScene?

    init(pki: TestPKI, directory: String, metrics: String) throws {
        do {
            try start(pki: pki, directory: directory, metrics: metrics)
        } catch {
            stop()
            throw error
        }
    }

    private func start(pki: TestPKI, directory: String, metrics: String) throws {
        let tls = try TLSServer(certificate: pki.path("ip"), key: pki.path("ip", "key"), chain: [pki.path("inter")], in: directory)
        tlsServer = tls
        let base = "https://127.0.0.1:\(tls.port)/"
        // name, url, extra YAML lines, expected category
        var healthy: [(String, String, String, String)] = [
            ("tls-pinned", base, "policy: pinned", "success"),
            ("tls-unpinned", base, "policy: test-ca", "success"),
            ("tls-other-pins", base, "policy: other-pins", "policy_rejected"),
            ("tls-body-mismatch", base, "policy: test-ca\n    expect: { body_contains: \"pinpath-never-there\" }", "unexpected_body"),
        ]
        if HTTPBinServer.isAvailable {
            let server = try HTTPBinServer()
            httpbin = server
            healthy += [
                ("httpbin-get", "\(server.baseURL)get", "expect: { body_contains: \"\\\"url\\\"\" }", "success"),
                ("httpbin-503", "\(server.baseURL)status/503", "", "unexpected_status"),
            ]
        }
        let hostile = try HostileAgentScene(pki: pki)
        self.hostile = hostile
        healthyCount = healthy.count
        var endpoints = ""
        for (name, url, extra, category) in healthy {
            endpoints += "  - name: \(name)\n    url: \(url)\n    interval: 1s\n    timeout: 1s\n" + (extra.isEmpty ? "" : "    \(extra)\n")
            expected[name] = [category]
        }
        endpoints += hostile.endpointsYAML(interval: "2s", timeout: "1s")
        for endpoint in hostile.endpoints {
            expected[endpoint.name] = endpoint.expectedCategory.map { [$0] } ?? ["success", "policy_rejected"]
        }
        let pins = { (names: [String]) in try names.map { "\"\(try pki.certificate($0).spkiPin)\"" }.joined(separator: ", ") }
        configurationYAML = """
            events: { output: stdout, probes: all }
            metrics: { textfile: \(metrics) }
            policies:
            \(hostile.policiesYAML)  pinned:
                mode: public_key
                pins: [\(try pins(["inter", "root"]))]
                ca_file: \(pki.path("store"))
              other-pins:
                mode: public_key
                pins: [\(try pins(["otherinter", "otherroot"]))]
                ca_file: \(pki.path("store"))
            endpoints:
            \(endpoints)
            """
    }

    func stop() {
        hostile?.stop()
        httpbin?.stop()
        tlsServer?.stop()
    }
}
