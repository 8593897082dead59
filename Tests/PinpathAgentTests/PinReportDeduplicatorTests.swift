import FoundationEssentials
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

@Suite("Pin report de-duplication")
struct PinReportDeduplicatorTests {
    typealias Key = PinReportDeduplicator.Key
    let start = ContinuousClock.now

    func at(hours: Double) -> ContinuousClock.Instant { start.advanced(by: .seconds(hours * 3600)) }

    static func key(
        host: String = "api.example.com", port: Int = 443, served: [String] = ["LEAF", "INT"],
        validated: [String] = ["LEAF", "INT", "ROOT"], pins: [String] = [#"pin-sha256="AAAA""#], result: Int = 1
    ) -> Key {
        Key(host: host, port: port, servedChain: served, validatedChain: validated, knownPins: pins, validationResult: result)
    }

    @Test("The first report goes out; repeats within 24 h are held back and counted in the next one emitted")
    func window() {
        var deduplicator = PinReportDeduplicator()
        let key = Self.key()
        #expect(deduplicator.decide(key, now: at(hours: 0)) == .emit(suppressed: 0))
        #expect(deduplicator.decide(key, now: at(hours: 1)) == .suppress)
        #expect(deduplicator.decide(key, now: at(hours: 23.9)) == .suppress)
        #expect(deduplicator.decide(key, now: at(hours: 24)) == .emit(suppressed: 2))
        #expect(deduplicator.decide(key, now: at(hours: 25)) == .suppress)
        #expect(deduplicator.decide(key, now: at(hours: 50)) == .emit(suppressed: 1))
        #expect(deduplicator.decide(key, now: at(hours: 80)) == .emit(suppressed: 0))
    }

    @Test(
        "Each part of the key makes a different report",
        arguments: [
            key(host: "other.example.com"), key(port: 8443), key(served: ["LEAF"]), key(validated: []),
            key(pins: [#"pin-sha256="BBBB""#]), key(result: 2),
        ])
    func distinct(other: Key) {
        var deduplicator = PinReportDeduplicator()
        #expect(deduplicator.decide(Self.key(), now: at(hours: 0)) == .emit(suppressed: 0))
        #expect(deduplicator.decide(other, now: at(hours: 0)) == .emit(suppressed: 0))
        #expect(deduplicator.decide(Self.key(), now: at(hours: 1)) == .suppress)
    }

    @Test("Memory is bounded: expired keys go first, then the oldest")
    func capacity() {
        var deduplicator = PinReportDeduplicator(window: .seconds(3600), capacity: 3)
        let keys = (0..<5).map { Self.key(port: $0) }
        #expect(deduplicator.decide(keys[0], now: at(hours: 0)) == .emit(suppressed: 0))
        #expect(deduplicator.decide(keys[1], now: at(hours: 0.5)) == .emit(suppressed: 0))
        #expect(deduplicator.decide(keys[2], now: at(hours: 0.75)) == .emit(suppressed: 0))
        // keys[0]'s window has passed: it goes, the others stay.
        #expect(deduplicator.decide(keys[3], now: at(hours: 1.1)) == .emit(suppressed: 0))
        #expect(deduplicator.count == 3)
        #expect(deduplicator.decide(keys[1], now: at(hours: 1.2)) == .suppress)
        // Nothing has expired: the oldest (keys[1], emitted at 0.5 h) goes.
        #expect(deduplicator.decide(keys[4], now: at(hours: 1.3)) == .emit(suppressed: 0))
        #expect(deduplicator.count == 3)
        #expect(deduplicator.decide(keys[1], now: at(hours: 1.3)) == .emit(suppressed: 0))
        #expect(deduplicator.decide(keys[3], now: at(hours: 1.4)) == .suppress)
    }

    @Test("Reports of the same failure at different dates have the same key")
    func datesExcluded() throws {
        let pki = TestPKI.shared
        let policy = try SecurityPolicy(
            mode: .publicKey, pins: [try pki.certificate("otherroot").spkiPin], enforce: true, requiresBackupPin: false)
        func report(at seconds: Double, host: String = "valid.test") throws -> PinFailureReport {
            try policy.evaluate(
                servedChain: try pki.chain(["valid", "inter"]), host: host, trustStore: try pki.trustStore(),
                now: Date(timeIntervalSince1970: seconds)
            ).report
        }
        let first = try report(at: 1_795_392_000)
        let second = try report(at: 1_795_478_400)
        #expect(first.dateTime != second.dateTime)
        #expect(Key(first) == Key(second))
        #expect(Key(first).validationResult == 1 && Key(first).validatedChain.count == 3)
        #expect(Key(first) != Key(try report(at: 1_795_392_000, host: "127.0.0.1")))
    }
}
