import PinpathReachability
import Testing

@testable import PinpathHTTP

/// The handshake engine's pure parts: the deadline heap and the order addresses are tried in.
@Suite("Handshake engine: deadlines and address order")
struct HandshakeSchedulingTests {
    @Test("The deadline heap gives its entries back earliest first, whatever the order they came in")
    func heapOrder() {
        let start = ContinuousClock.now
        var generator = SystemRandomNumberGenerator()
        let offsets = (0..<500).map { _ in Int.random(in: 0..<10_000, using: &generator) }
        var heap = DeadlineHeap()
        for (serial, offset) in offsets.enumerated() { heap.insert(start + .milliseconds(offset), serial: UInt64(serial)) }
        #expect(heap.first?.instant == start + .milliseconds(offsets.min()!))
        var popped: [ContinuousClock.Instant] = []
        while let entry = heap.removeFirst() { popped.append(entry.instant) }
        #expect(popped == offsets.sorted().map { start + .milliseconds($0) })
        #expect(heap.isEmpty && heap.first == nil)
    }

    @Test(
        "Addresses alternate families, the resolver's first family first (RFC 8305), each family's order kept",
        arguments: [
            (["2001:db8::1", "2001:db8::2", "192.0.2.1", "192.0.2.2"], ["2001:db8::1", "192.0.2.1", "2001:db8::2", "192.0.2.2"]),
            (["192.0.2.1", "2001:db8::1", "2001:db8::2", "2001:db8::3"], ["192.0.2.1", "2001:db8::1", "2001:db8::2", "2001:db8::3"]),
            (["192.0.2.1", "192.0.2.2"], ["192.0.2.1", "192.0.2.2"]),
            ([], []),
        ])
    func familiesAlternate(_ resolved: [String], _ expected: [String]) {
        let order = HandshakeCheck.interleavingFamilies(resolved.map { IPAddress($0)! })
        #expect(order.map(\.description) == expected)
    }
}
