import PinpathReachability
import Testing

@testable import PinpathAgent

/// `/readyz`'s answer, from the store the server reads.
@Suite("/readyz readiness")
struct MetricsReadinessTests {
    let path = NetworkPath(status: .reachable, primaryInterface: nil, ipv4: nil, ipv6: nil, interfaces: [], targets: [])

    func endpoint(_ name: String, state: EndpointState.Status) -> MetricsSnapshot.Endpoint {
        MetricsSnapshot.Endpoint(
            name: name, probeSucceeded: state == .unknown ? nil : state == .up, probeDuration: nil, phaseDurations: [],
            statusCode: nil, tlsVersion: nil, state: state, earliestCertificateExpiry: nil, lastChainExpiry: nil,
            enforcedPinFailures: 0, ocspResponseStatus: nil)
    }

    @Test("Not ready before the agent has sent its endpoints, even with the path known; then once each has a result")
    func readiness() {
        let store = MetricsStore(eventsDropped: { EventWriterThread.Statistics() })
        store.update(path: path)
        #expect(!store.isReady, "the path came first: the endpoints are not known yet")
        store.update(order: ["a", "b"], endpoints: [endpoint("a", state: .unknown), endpoint("b", state: .unknown)], probes: 0)
        #expect(!store.isReady)
        store.update(order: nil, endpoints: [endpoint("a", state: .up), endpoint("b", state: .down)], probes: 2)
        #expect(store.isReady)
    }

    @Test("An agent with no endpoints is ready once it has said so and the path is known")
    func noEndpoints() {
        let store = MetricsStore(eventsDropped: { EventWriterThread.Statistics() })
        store.update(order: [], endpoints: [], probes: 0)
        #expect(!store.isReady)
        store.update(path: path)
        #expect(store.isReady)
    }
}
