import FoundationEssentials
import PinpathHTTP
import Testing

@testable import PinpathAgent
@testable import PinpathReachability

/// Issue 25, round 2: the monitor's verdict on a host *name* rests on a DNS answer, which whoever answers DNS
/// writes; for an endpoint no wire verdict may hold (TLS, a policy, an https proxy) it may only raise. As values:
/// the namespace tests (`DNSVerdictNamespaceTests`) run it against real servers and a spoofed answer.
@Suite("DNS verdicts in the agent")
struct DNSVerdictTests {
    /// The endpoints: named TLS ones (a policy, https, tls, STARTTLS, an https proxy by name), a numeric TLS one,
    /// plain named ones (http, tcp, through an http proxy), and ones bound to one address family.
    static func registry() throws -> EndpointRegistry {
        let configuration = try loadConfiguration(
            """
            policies:
              pinned: { mode: public_key, pins: ["\(pinA)", "\(pinB)"] }
            endpoints:
              - { name: pinned, url: "https://pinned.test/", policy: pinned }
              - { name: https, url: "https://pinned.test:8443/" }
              - { name: tls, url: "tls://pinned.test:5671" }
              - { name: smtp, url: "smtp://pinned.test:587", starttls: true }
              - { name: via-https-proxy, url: "http://plain.test/", proxy: "https://proxy.test:3129" }
              - { name: numeric, url: "https://198.51.100.7/" }
              - { name: http, url: "http://plain.test/" }
              - { name: tcp, url: "tcp://plain.test:5432" }
              - { name: via-http-proxy, url: "http://plain.test:8080/", proxy: "http://proxy.test:3128" }
              - { name: ipv6-only, url: "https://pinned.test:9443/", ip_family: ipv6 }
              - { name: ipv4-only, url: "https://pinned.test:9444/", ip_family: ipv4 }
            """)
        return EndpointRegistry(configuration.endpoints, thresholdsOfOne: false)
    }

    /// Named TLS endpoints whose host verdict may only raise.
    static let raisingOnly: Set = ["pinned", "https", "tls", "smtp", "via-https-proxy", "ipv6-only", "ipv4-only"]

    /// An IPv4-only path (reachable unless `pathReachable` is false: no default route, eth0 still on its network
    /// unless `offline`), the watched hosts' verdicts as given: every one not reachable (no route to the address
    /// its name resolved to) unless `hostsReachable`.
    static func path(pathReachable: Bool = true, offline: Bool = false, hostsReachable: Bool = false) -> NetworkPath {
        let eth0 = NetworkInterface(
            index: 2, name: "eth0", kind: .wired, isAdminUp: true, hasCarrier: !offline, operationalState: offline ? .down : .up, mtu: 1500,
            addresses: [InterfaceAddress(address: IPAddress("10.0.0.1")!, prefixLength: 24)])
        let egress = FamilyPath(interfaceIndex: 2, interfaceName: "eth0", gateway: IPAddress("10.0.0.254"), source: nil, table: 254)
        let targets = [
            ("pinned.test", "2001:db8::1"), ("plain.test", "2001:db8::2"), ("proxy.test", "2001:db8::3"), ("198.51.100.7", "198.51.100.7"),
        ]
        .map { target, address in
            TargetReachability(
                target: target, status: hostsReachable ? .reachable : .unreachable, interfaceName: hostsReachable ? "tun0" : nil,
                address: IPAddress(address), reason: hostsReachable ? nil : .noRoute)
        }
        return NetworkPath(
            status: pathReachable ? .reachable : .unreachable, primaryInterface: pathReachable ? eth0 : nil,
            ipv4: pathReachable ? egress : nil, ipv6: nil, interfaces: [eth0], targets: targets)
    }

    @Test("Which endpoints' host verdicts may only raise: named hosts of TLS endpoints, never numeric hosts nor plain endpoints")
    func whichRaiseOnly() throws {
        let registry = try Self.registry()
        for name in registry.order {
            let endpoint = try #require(registry.probeTarget(name)?.endpoint)
            #expect(EndpointTracker.hostVerdictMayOnlyRaise(endpoint) == Self.raisingOnly.contains(name), "\(name)")
            // The probe asks the gate to let the name's verdict refuse exactly when it may hold the endpoint.
            #expect(EndpointProbe.options(for: endpoint).nameVerdictMayRefuse == !Self.raisingOnly.contains(name), "\(name)")
        }
    }

    @Test(
        """
        With the path reachable, a not-reachable verdict on a name holds no named TLS endpoint (except one bound to a family the \
        path lacks); it still holds the numeric and plain ones, with path_unreachable
        """)
    func nameVerdictHoldsNoTLSEndpoint() throws {
        var registry = try Self.registry()
        let result = registry.pathChanged(Self.path())
        #expect(result.unreachable == ["numeric", "http", "tcp", "via-http-proxy", "ipv6-only"])
        #expect(Set(ConnectivityAgentTests.transitions(result.events).values) == ["path_unreachable"])
        #expect(Set(registry.probed) == ["pinned", "https", "tls", "smtp", "via-https-proxy", "ipv4-only"])
    }

    @Test("Off every network the kernel's word holds every endpoint; a name with a route of its own (a VPN) is still probed")
    func pathStillHolds() throws {
        var registry = try Self.registry()
        let held = registry.pathChanged(Self.path(pathReachable: false, offline: true))
        #expect(held.unreachable == registry.order)

        var viaVPN = try Self.registry()
        let probed = viaVPN.pathChanged(Self.path(pathReachable: false, hostsReachable: true))
        #expect(probed.unreachable.isEmpty, "\(probed.unreachable)")
    }

    /// Round 3 (review): on a network with routes but no default one (an internal network, a split VPN), a named
    /// TLS endpoint is reached only through a route its name's answer points into; an unroutable answer held it
    /// `unreachable`, quiet. The machine being on a network (an address on a usable interface) is the kernel's
    /// word; the name's verdict on it may only raise.
    @Test("Without a default route but on a network, a not-reachable verdict on a name holds no named TLS endpoint")
    func noDefaultRoute() throws {
        var registry = try Self.registry()
        let result = registry.pathChanged(Self.path(pathReachable: false))
        #expect(result.unreachable == ["numeric", "http", "tcp", "via-http-proxy", "ipv6-only"])
        #expect(Set(registry.probed) == ["pinned", "https", "tls", "smtp", "via-https-proxy", "ipv4-only"])
    }

    @Test(
        """
        A probe refused as not reachable is a failure for a named TLS endpoint while the machine is on a network, else \
        unreachable; \
        numeric and plain endpoints keep unreachable
        """)
    func refusedProbeOutcome() throws {
        let registry = try Self.registry()
        for name in registry.order {
            let endpoint = try #require(registry.probeTarget(name)?.endpoint)
            let failsOnPath = Self.raisingOnly.contains(name) && name != "ipv6-only"
            #expect(EndpointTracker.outcomeOfRefusedProbe(endpoint, on: Self.path()) == (failsOnPath ? .failure : .unreachable), "\(name)")
            #expect(
                EndpointTracker.outcomeOfRefusedProbe(endpoint, on: Self.path(pathReachable: false))
                    == (failsOnPath ? .failure : .unreachable),
                "\(name)")
            #expect(
                EndpointTracker.outcomeOfRefusedProbe(endpoint, on: Self.path(pathReachable: false, offline: true)) == .unreachable,
                "\(name)")
        }
    }

    @Test(
        "Those failures count toward down as any other (cause probe_failed, category unreachable), never dropped nor the state unreachable"
    )
    func failuresCount() throws {
        var registry = try Self.registry()
        _ = registry.pathChanged(Self.path())
        var result = ProbeResult(endpoint: "pinned", outcome: .failure, started: Date())
        result.errorCategory = .unreachable
        result.message = "GET https://pinned.test/: no resolved address is reachable (2001:db8::1: no_route)"
        var events: [AgentEvent] = []
        for _ in 0..<2 {
            events +=
                registry.record(
                    result, generation: 0, reportEveryProbe: true, includeCertificates: false, connectivity: nil,
                    currentPath: { Self.path() }
                ).events
        }
        #expect(events.filter { $0.name == "probe.completed" }.count == 2)
        let changed = try #require(events.first { $0.name == "endpoint.state_changed" })
        let fields = Dictionary(changed.fields, uniquingKeysWith: { first, _ in first })
        #expect(fields["state"] == .string("down") && fields["cause"] == .string("probe_failed"))
        #expect(registry.failures == 2)
    }

    @Test("An unreachable result from a probe that met a path since come back is still dropped: stale, it says nothing")
    func staleUnreachableDropped() throws {
        var registry = try Self.registry()
        let result = ProbeResult(endpoint: "pinned", outcome: .unreachable, started: Date())
        let recorded = registry.record(
            result, generation: 0, reportEveryProbe: false, includeCertificates: false, connectivity: nil, currentPath: { Self.path() })
        #expect(recorded.events.isEmpty)
    }
}
