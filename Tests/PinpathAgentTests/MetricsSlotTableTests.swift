import Testing

@testable import PinpathAgent

/// Which connection gives its slot up to a newcomer (pure logic; the listener itself is attacked in
/// MetricsEndpointTests).
@Suite("/metrics connection slots")
struct MetricsSlotTableTests {
    /// A connection's identity for the table.
    final class Connection {}

    static let alice = MetricsSlotTable.Peer.address("127.0.0.2")
    static let bob = MetricsSlotTable.Peer.address("127.0.0.3")
    static let scraper = MetricsSlotTable.Peer.address("127.0.0.1")

    static let start = ContinuousClock.now
    static func at(_ seconds: Int64) -> ContinuousClock.Instant { start + .seconds(seconds) }

    @Test("A peer at its share gives up its own connection that has waited longest, never another peer's")
    func peerShare() {
        var table = MetricsSlotTable(capacity: 4, perPeer: 2)
        let connections = (0..<3).map { _ in Connection() }
        let other = Connection()
        #expect(table.admit(ObjectIdentifier(other), peer: Self.bob, now: Self.at(0)) == .admitted(evicting: nil))
        #expect(table.admit(ObjectIdentifier(connections[0]), peer: Self.alice, now: Self.at(1)) == .admitted(evicting: nil))
        #expect(table.admit(ObjectIdentifier(connections[1]), peer: Self.alice, now: Self.at(2)) == .admitted(evicting: nil))
        #expect(
            table.admit(ObjectIdentifier(connections[2]), peer: Self.alice, now: Self.at(3))
                == .admitted(evicting: ObjectIdentifier(connections[0])))
        #expect(table.count == 3)
        #expect(table.phase(of: ObjectIdentifier(connections[0])) == nil)
    }

    @Test("Full: the peer holding the most slots gives one up; connections being answered are never taken")
    func full() {
        var table = MetricsSlotTable(capacity: 3, perPeer: 3)
        let (a1, a2, b1) = (Connection(), Connection(), Connection())
        _ = table.admit(ObjectIdentifier(b1), peer: Self.bob, now: Self.at(0))
        _ = table.admit(ObjectIdentifier(a1), peer: Self.alice, now: Self.at(1))
        _ = table.admit(ObjectIdentifier(a2), peer: Self.alice, now: Self.at(2))
        // bob's connection waited longest, but alice holds more.
        let scrape = Connection()
        #expect(table.admit(ObjectIdentifier(scrape), peer: Self.scraper, now: Self.at(3)) == .admitted(evicting: ObjectIdentifier(a1)))
        table.update(ObjectIdentifier(scrape), .answering, now: Self.at(3))
        // Now one each: the longest waiting goes (bob's), never the scrape being answered.
        let next = Connection()
        #expect(table.admit(ObjectIdentifier(next), peer: Self.alice, now: Self.at(4)) == .admitted(evicting: ObjectIdentifier(b1)))
    }

    @Test("An answer the client does not read can lose its slot; when every slot is being answered the newcomer is refused")
    func answering() {
        var table = MetricsSlotTable(capacity: 2, perPeer: 2)
        let (first, second) = (Connection(), Connection())
        _ = table.admit(ObjectIdentifier(first), peer: Self.alice, now: Self.at(0))
        _ = table.admit(ObjectIdentifier(second), peer: Self.bob, now: Self.at(1))
        table.update(ObjectIdentifier(first), .answering, now: Self.at(2))
        table.update(ObjectIdentifier(second), .answering, now: Self.at(2))
        #expect(table.admit(ObjectIdentifier(Connection()), peer: Self.scraper, now: Self.at(3)) == .refused)
        table.update(ObjectIdentifier(first), .awaitingReader, now: Self.at(4))
        let scrape = Connection()
        #expect(table.admit(ObjectIdentifier(scrape), peer: Self.scraper, now: Self.at(5)) == .admitted(evicting: ObjectIdentifier(first)))
        table.release(ObjectIdentifier(second))
        #expect(table.count == 1)
    }
}
