import Testing

@testable import PinpathAgent

/// Which connection gives its slot up to a newcomer, and who counts as one peer (pure logic; the listener itself is
/// attacked in MetricsEndpointTests).
@Suite("/metrics connection slots")
struct MetricsSlotTableTests {
    /// A connection's identity for the table.
    final class Connection {}

    static let alice = MetricsSlotTable.Peer.user(1001)
    static let bob = MetricsSlotTable.Peer.address("192.0.2.7")
    static let scraper = MetricsSlotTable.Peer.user(108)

    static let start = ContinuousClock.now
    static func at(_ seconds: Int64) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("A peer at its share gives up its own connection that has waited longest, never another peer's")
    func peerShare() {
        var table = MetricsSlotTable(capacity: 4, perPeer: 2)
        let connections = (0..<3).map { _ in Connection() }
        let other = Connection()
        #expect(table.admit(ObjectIdentifier(other), peer: Self.bob, now: Self.at(0)) == nil)
        #expect(table.admit(ObjectIdentifier(connections[0]), peer: Self.alice, now: Self.at(1)) == nil)
        #expect(table.admit(ObjectIdentifier(connections[1]), peer: Self.alice, now: Self.at(2)) == nil)
        #expect(table.admit(ObjectIdentifier(connections[2]), peer: Self.alice, now: Self.at(3)) == ObjectIdentifier(connections[0]))
        #expect(table.count == 3)
        #expect(table.phase(of: ObjectIdentifier(connections[0])) == nil)
    }

    @Test("Full: the peer holding the most slots gives one up; among equals, the client that made no progress for longest")
    func full() {
        var table = MetricsSlotTable(capacity: 3, perPeer: 3)
        let (a1, a2, b1) = (Connection(), Connection(), Connection())
        _ = table.admit(ObjectIdentifier(b1), peer: Self.bob, now: Self.at(0))
        _ = table.admit(ObjectIdentifier(a1), peer: Self.alice, now: Self.at(1))
        _ = table.admit(ObjectIdentifier(a2), peer: Self.alice, now: Self.at(2))
        // bob's connection waited longest, but alice holds more.
        let scrape = Connection()
        #expect(table.admit(ObjectIdentifier(scrape), peer: Self.scraper, now: Self.at(3)) == ObjectIdentifier(a1))
        // One each now. The scrape asked first and takes its answer as it comes; bob asked later and reads nothing.
        table.requestReceived(ObjectIdentifier(scrape), now: Self.at(3))
        table.requestReceived(ObjectIdentifier(b1), now: Self.at(4))
        table.progressed(ObjectIdentifier(scrape), now: Self.at(5))
        let next = Connection()
        #expect(table.admit(ObjectIdentifier(next), peer: Self.alice, now: Self.at(6)) == ObjectIdentifier(a2))
        #expect(table.admit(ObjectIdentifier(Connection()), peer: .address("192.0.2.8"), now: Self.at(7)) == ObjectIdentifier(b1))
        #expect(table.phase(of: ObjectIdentifier(scrape)) == .awaitingReader)
    }

    /// Found in the second review (issue 25): a connection whose answer was queued whole was "being answered" and
    /// could not be taken, so clients that asked and never read kept every scraper out.
    @Test("Every slot can be taken, however its answer stands: a newcomer is never refused")
    func answersNotTaken() {
        var table = MetricsSlotTable(capacity: 2, perPeer: 2)
        let (first, second) = (Connection(), Connection())
        _ = table.admit(ObjectIdentifier(first), peer: Self.alice, now: Self.at(0))
        _ = table.admit(ObjectIdentifier(second), peer: Self.bob, now: Self.at(1))
        table.requestReceived(ObjectIdentifier(first), now: Self.at(2))
        table.requestReceived(ObjectIdentifier(second), now: Self.at(3))
        let scrape = Connection()
        #expect(table.admit(ObjectIdentifier(scrape), peer: Self.scraper, now: Self.at(4)) == ObjectIdentifier(first))
        #expect(table.phase(of: ObjectIdentifier(scrape)) == .awaitingRequest)
        table.release(ObjectIdentifier(second))
        #expect(table.count == 1)
    }

    @Test(
        "One peer: any loopback address or ::1 (this host, user unknown), an IPv4 address also when mapped, an IPv6 /64",
        arguments: [
            ([127, 0, 0, 1], MetricsSlotTable.Peer.local), ([127, 200, 3, 4], .local), ([192, 0, 2, 7], .address("192.0.2.7")),
        ])
    func ipv4Peers(bytes: [UInt8], peer: MetricsSlotTable.Peer) {
        #expect(MetricsSlotTable.Peer(ipv4: bytes) == peer)
        #expect(MetricsSlotTable.Peer(ipv6: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] + bytes) == peer, "mapped into IPv6")
    }

    @Test("IPv6: ::1 is this host's; addresses count by their /64")
    func ipv6Peers() {
        let loopback = [UInt8](repeating: 0, count: 15) + [1]
        #expect(MetricsSlotTable.Peer(ipv6: loopback) == .local)
        let host: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2] + [0xaa, 0xbb, 0, 0, 0, 0, 0, 1]
        let sameSubnet: [UInt8] = Array(host[0..<8]) + [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]
        let otherSubnet: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 3] + Array(host[8...])
        #expect(MetricsSlotTable.Peer(ipv6: host) == .address("2001:db8:1:2::/64"))
        #expect(MetricsSlotTable.Peer(ipv6: sameSubnet) == MetricsSlotTable.Peer(ipv6: host))
        #expect(MetricsSlotTable.Peer(ipv6: otherSubnet) != MetricsSlotTable.Peer(ipv6: host))
    }
}
