import FoundationEssentials
import PinpathHTTP
import Testing

@testable import PinpathAgent
@testable import PinpathReachability

/// `connectivity:` as configuration, and what its verdict does to endpoints, as values (the namespace tests
/// run it against real servers).
@Suite("Connectivity in the agent")
struct ConnectivityAgentTests {
    @Test("The block loads with its defaults: 204, an empty body, 300 s, 10 s")
    func defaults() throws {
        let configuration = try loadConfiguration("connectivity:\n  url: http://192.0.2.10/generate_204\n")
        let connectivity = try #require(configuration.connectivity)
        #expect(connectivity.check.url.absoluteString == "http://192.0.2.10/generate_204")
        #expect(connectivity.check.expectedStatus == 204 && connectivity.check.expectedBody == nil)
        #expect(connectivity.interval == .seconds(300) && connectivity.check.timeout == .seconds(10))
        #expect(try loadConfiguration("endpoints: []\n").connectivity == nil)
    }

    @Test("Every key is read")
    func allKeys() throws {
        let configuration = try loadConfiguration(
            """
            connectivity:
              url: https://check.example/online
              expect: { status: 200, body: "is online" }
              interval: 1m
              timeout: 5s
            """)
        let connectivity = try #require(configuration.connectivity)
        #expect(connectivity.check.expectedStatus == 200 && connectivity.check.expectedBody == "is online")
        #expect(connectivity.interval == .seconds(60) && connectivity.check.timeout == .seconds(5))
    }

    @Test(
        "Bad values are refused at their line and column, saying what was wrong",
        arguments: [
            ("connectivity:\n  interval: 1m\n", "test.yaml:2:3: connectivity: url is missing"),
            (
                "connectivity:\n  url: tls://192.0.2.10:443\n",
                "test.yaml:2:8: connectivity.url: \"tls://192.0.2.10:443\" is not http:// or https://"
            ),
            ("connectivity:\n  url: not a url\n", "test.yaml:2:8: connectivity.url: \"not a url\" is not a URL pinpath probes"),
            (
                "connectivity:\n  url: http://192.0.2.10/\n  expect: { status: 302 }\n",
                "test.yaml:3:21: connectivity.expect.status: 302 is a redirect"
            ),
            (
                "connectivity:\n  url: http://192.0.2.10/\n  expect: { status: 99 }\n",
                "test.yaml:3:21: connectivity.expect.status: 99 is out of range"
            ),
            (
                "connectivity:\n  url: http://192.0.2.10/\n  expect: { code: 204 }\n",
                "test.yaml:3:13: connectivity.expect.code: unknown key \"code\""
            ),
            (
                "connectivity:\n  url: http://192.0.2.10/\n  interval: 10s\n  timeout: 10s\n",
                "test.yaml:4:12: connectivity.timeout: timeout 10s must be shorter than interval 10s"
            ),
            (
                "connectivity:\n  url: http://192.0.2.10/\n  interval: 5s\n",
                "test.yaml:3:13: connectivity.interval: timeout 10s must be shorter than interval 5s"
            ),
            (
                "connectivity:\n  url: http://192.0.2.10/\n  intervall: 5m\n",
                "test.yaml:3:3: connectivity.intervall: unknown key \"intervall\"; did you mean \"interval\"?"
            ),
            ("connectivity: http://192.0.2.10/\n", "test.yaml:1:15: connectivity: expected a mapping"),
            (
                "connectivity:\n  url: http://user:pw@192.0.2.10/\n",
                "test.yaml:2:8: connectivity.url: the URL holds a user name or password"
            ),
        ])
    func refused(yaml: String, expected: String) {
        let problems = configurationProblems(yaml)
        #expect(problems.contains { $0.hasPrefix(expected) }, "\(problems)")
        #expect(!problems.joined().contains("pw@"))
    }

    @Test("A changed check is applied at the next start, as reported by a reload")
    func reloadNeedsRestart() throws {
        let old = try loadConfiguration("connectivity:\n  url: http://192.0.2.10/generate_204\n")
        let new = try loadConfiguration("connectivity:\n  url: http://192.0.2.11/generate_204\n")
        #expect(ConfigurationChange(from: old, to: new).restartRequired == ["connectivity"])
        #expect(ConfigurationChange(from: old, to: old).restartRequired.isEmpty)
    }

    // MARK: Endpoints

    /// eth0 with 10.0.0.1/24, watching the endpoints' hosts and proxies: all reachable, or (not `reachable`) the
    /// path and every host without a route.
    static func path(reachable: Bool = true) -> NetworkPath {
        let eth0 = NetworkInterface(
            index: 2, name: "eth0", kind: .wired, isAdminUp: true, hasCarrier: true, operationalState: .up, mtu: 1500,
            addresses: [InterfaceAddress(address: IPAddress("10.0.0.1")!, prefixLength: 24)])
        let targets = ["198.51.100.7", "198.51.100.9", "10.0.0.20", "127.0.0.1"].map {
            TargetReachability(
                target: $0, status: reachable ? .reachable : .unreachable, interfaceName: reachable ? "eth0" : nil,
                address: IPAddress($0), reason: reachable ? nil : .noRoute)
        }
        return NetworkPath(
            status: reachable ? .reachable : .unreachable, primaryInterface: reachable ? eth0 : nil, ipv4: nil, ipv6: nil,
            interfaces: [eth0], targets: targets)
    }

    static func registry() throws -> EndpointRegistry {
        let configuration = try loadConfiguration(
            """
            endpoints:
              - { name: external, url: "http://198.51.100.7/" }
              - { name: lan, url: "http://10.0.0.20/" }
              - { name: loopback, url: "http://127.0.0.1:8080/" }
            """)
        return EndpointRegistry(configuration.endpoints, thresholdsOfOne: false)
    }

    static func transitions(_ events: [AgentEvent]) -> [String: String] {
        var causes: [String: String] = [:]
        for event in events {
            guard case .string(let name)? = event.fields.first(where: { $0.0 == "endpoint" })?.1,
                case .string(let cause)? = event.fields.first(where: { $0.0 == "cause" })?.1
            else { continue }
            causes[name] = cause
        }
        return causes
    }

    @Test(
        "Limited, portal and intercepted hold the plain endpoints outside the local network, with their cause; local ones keep probing",
        arguments: [
            (ConnectivityState.limited, "connectivity_limited"), (.portal, "captive_portal"), (.intercepted, "connectivity_intercepted"),
        ])
    func heldOutside(state: ConnectivityState, cause: String) throws {
        var registry = try Self.registry()
        let held = registry.pathChanged(Self.path(), connectivity: state)
        #expect(held.unreachable == ["external"])
        #expect(Self.transitions(held.events) == ["external": cause])
        #expect(held.events.allSatisfy { $0.level == .warning })
        #expect(held.events.allSatisfy { $0.fields.contains { $0.0 == "connectivity" && $0.1 == .string(state.rawValue) } })

        let released = registry.pathChanged(Self.path(), connectivity: .full)
        #expect(released.events.isEmpty && released.returning == ["external"])
    }

    @Test("Full, none and no verdict yet hold nothing beyond the path's own rule")
    func nothingHeld() throws {
        let states: [ConnectivityState?] = [.full, .some(.none), nil]
        for state in states {
            var registry = try Self.registry()
            let result = registry.pathChanged(Self.path(), connectivity: state)
            #expect(result.unreachable.isEmpty && result.events.isEmpty, "\(String(describing: state))")
        }
    }

    @Test("A probe result that arrives while the endpoint is held changes nothing: it does not count toward down")
    func resultWhileHeld() throws {
        var registry = try Self.registry()
        _ = registry.pathChanged(Self.path(), connectivity: .portal)
        let failure = ProbeResult(endpoint: "external", outcome: .failure, started: Date())
        for _ in 0..<3 {
            let (events, _) = registry.record(
                failure, generation: 0, reportEveryProbe: false, includeCertificates: false, connectivity: .portal,
                currentPath: { Self.path() })
            #expect(events.isEmpty)
        }
    }

    /// One endpoint of each kind on "the internet" (198.51.100.7), and a plain one on the LAN.
    static func mixedRegistry() throws -> EndpointRegistry {
        let configuration = try loadConfiguration(
            """
            policies:
              pinned: { mode: public_key, pins: ["\(pinA)", "\(pinB)"] }
            endpoints:
              - { name: http, url: "http://198.51.100.7/" }
              - { name: tcp, url: "tcp://198.51.100.7:5432" }
              - { name: lan, url: "http://10.0.0.20/" }
              - { name: https, url: "https://198.51.100.7/" }
              - { name: pinned, url: "https://198.51.100.7:8443/", policy: pinned }
              - { name: tls, url: "tls://198.51.100.7:5671" }
              - { name: smtp, url: "smtp://198.51.100.7:587", starttls: true }
              - { name: ldaps, url: "ldaps://198.51.100.7" }
              - { name: http-via-https-proxy, url: "http://198.51.100.7:8080/", proxy: "https://198.51.100.9:3129" }
              - { name: http-via-http-proxy, url: "http://198.51.100.7:8081/", proxy: "http://198.51.100.9:3128" }
            """)
        return EndpointRegistry(configuration.endpoints, thresholdsOfOne: false)
    }

    @Test(
        "Endpoints whose probe involves TLS are probed in every connectivity state; only plain ones outside the LAN are held",
        arguments: [ConnectivityState.limited, .portal, .intercepted])
    func tlsNeverHeld(state: ConnectivityState) throws {
        var registry = try Self.mixedRegistry()
        let held = registry.pathChanged(Self.path(), connectivity: state)
        #expect(held.unreachable == ["http", "tcp", "http-via-http-proxy"])
        #expect(Set(registry.probed) == ["lan", "https", "pinned", "tls", "smtp", "ldaps", "http-via-https-proxy"])
    }

    @Test("The path's own rule still holds every endpoint, TLS ones included: it comes from the kernel, not from the wire")
    func pathHoldsEverything() throws {
        var registry = try Self.mixedRegistry()
        let held = registry.pathChanged(Self.path(reachable: false), connectivity: .portal)
        #expect(held.unreachable == registry.order)
        #expect(Set(Self.transitions(held.events).values) == ["path_unreachable"])
    }

    @Test("A TLS endpoint's failures while portal count as any other: down after failure_threshold, cause probe_failed, with the state")
    func failureWhilePortal() throws {
        var registry = try Self.mixedRegistry()
        _ = registry.pathChanged(Self.path(), connectivity: .portal)
        var result = ProbeResult(endpoint: "pinned", outcome: .failure, started: Date())
        result.errorCategory = .policyRejected
        var events: [AgentEvent] = []
        for _ in 0..<2 {
            let recorded = registry.record(
                result, generation: 0, reportEveryProbe: true, includeCertificates: false, connectivity: .portal,
                currentPath: { Self.path() })
            events += recorded.events
        }
        let completed = events.filter { $0.name == "probe.completed" }
        #expect(completed.count == 2)
        #expect(completed.allSatisfy { $0.fields.last! == ("connectivity", .string("portal")) })
        let changed = try #require(events.first { $0.name == "endpoint.state_changed" })
        #expect(changed.level == .error)
        let fields = Dictionary(changed.fields, uniquingKeysWith: { first, _ in first })
        #expect(fields["state"] == .string("down") && fields["cause"] == .string("probe_failed"))
        #expect(fields["connectivity"] == .string("portal"))
        #expect(registry.failures == 2)
    }

    @Test("The state machine treats both causes as the path's: unreachable at once, released by pathReachable")
    func stateMachine() {
        for input in [EndpointState.Input.connectivityLimited, .captivePortal, .connectivityIntercepted] {
            var state = EndpointState()
            _ = state.apply(.probeSucceeded)
            let transition = state.apply(input)
            #expect(transition?.current == .unreachable && transition?.cause == input)
            #expect(!state.pathIsReachable)
            #expect(state.apply(.probeFailed) == nil)
            _ = state.apply(.pathReachable)
            #expect(state.apply(.probeSucceeded)?.current == .up)
        }
    }

    @Test("The metric: one sample per state, 1 for the current one, and the check's duration")
    func metric() {
        var snapshot = MetricsSnapshot()
        snapshot.pathStatus = .reachable
        #expect(!MetricsExposition.render(snapshot).contains("pinpath_connectivity_status"))
        snapshot.connectivity = (.portal, 0.0125)
        let text = MetricsExposition.render(snapshot)
        for state in ConnectivityState.allCases {
            #expect(text.contains("pinpath_connectivity_status{state=\"\(state.rawValue)\"} \(state == .portal ? 1 : 0)\n"))
        }
        #expect(text.contains("pinpath_connectivity_check_duration_seconds 0.0125\n"))
    }
}

@Suite("Connectivity in the example configuration")
struct ConnectivityExampleTests {
    @Test("etc/pinpath.yaml's commented connectivity: block loads once uncommented")
    func commentedExample() throws {
        let lines = try String(contentsOfFile: exampleConfiguration, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex(of: "# connectivity:"), "etc/pinpath.yaml has no commented connectivity: block")
        let block = [lines[start]] + lines[(start + 1)...].prefix { $0.hasPrefix("#   ") }
        let yaml = block.map { $0.dropFirst(2) }.joined(separator: "\n") + "\n"
        let connectivity = try #require(try loadConfiguration(yaml).connectivity)
        #expect(connectivity.check.url.scheme == "http")
        #expect(connectivity.interval == .seconds(300) && connectivity.check.expectedStatus == 204)
    }
}
