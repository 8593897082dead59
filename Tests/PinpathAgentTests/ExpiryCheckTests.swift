import FoundationEssentials
import PinpathSecurity
import PinpathTestSupport
import Testing

@testable import PinpathAgent

@Suite("Certificate expiry warnings")
struct ExpiryCheckTests {
    typealias Certificate = ExpiryCheck.Certificate
    static let day = 86_400.0
    let now = Date(timeIntervalSince1970: 1_795_392_000)

    func certificate(_ name: String, days: Double) -> Certificate {
        Certificate(identity: "fp-\(name)", subject: "CN=\(name)", notAfter: now.addingTimeInterval(days * Self.day))
    }

    static let fourThresholds: [Duration] = [30, 14, 7, 1].map { .seconds($0 * 86_400) }

    @Test("Only certificates within a threshold warn, with their depth, whole days left and threshold")
    func window() {
        var check = ExpiryCheck(thresholds: [.seconds(30 * 86_400)])
        let chain = [certificate("leaf", days: 10.5), certificate("intermediate", days: 400), certificate("root", days: 30)]
        let warnings = check.check(chain: chain, now: now)
        #expect(warnings.map(\.certificate.subject) == ["CN=leaf", "CN=root"])
        #expect(warnings.map(\.depth) == [0, 2])
        #expect(warnings.map(\.daysLeft) == [10, 30])
        #expect(warnings.map(\.threshold) == [.seconds(30 * 86_400), .seconds(30 * 86_400)])
    }

    @Test("Each threshold crossed warns once, not on every probe nor every day")
    func thresholds() {
        var check = ExpiryCheck(thresholds: Self.fourThresholds.reversed())  // any order
        let leaf = certificate("leaf", days: 30.2)
        func warn(after days: Double) -> [Duration] {
            check.check(chain: [leaf], now: now.addingTimeInterval(days * Self.day)).map(\.threshold)
        }
        #expect(warn(after: 0) == [])
        #expect(warn(after: 0.25) == [.seconds(30 * 86_400)])
        #expect(warn(after: 0.5) == [])
        #expect(warn(after: 5) == [])
        #expect(warn(after: 16.3) == [.seconds(14 * 86_400)])
        #expect(warn(after: 20) == [])
        #expect(warn(after: 23.3) == [.seconds(7 * 86_400)])
        #expect(warn(after: 29.3) == [.seconds(86_400)])
        #expect(warn(after: 29.9) == [])
        #expect(warn(after: 31) == [])  // expired: still within the smallest, already warned
    }

    @Test("A certificate first seen within several thresholds warns once, for the smallest (as after a restart)")
    func firstSeen() {
        var check = ExpiryCheck(thresholds: Self.fourThresholds)
        let warnings = check.check(chain: [certificate("leaf", days: 10)], now: now)
        #expect(warnings.map(\.threshold) == [.seconds(14 * 86_400)])
        #expect(warnings.map(\.daysLeft) == [10])
        #expect(check.check(chain: [certificate("leaf", days: 10)], now: now).isEmpty)
    }

    @Test("No thresholds (0s or []) never warn")
    func off() {
        var check = ExpiryCheck(thresholds: [.zero])
        #expect(check.check(chain: [certificate("leaf", days: 0.5)], now: now).isEmpty)
    }

    @Test("A renewed certificate is a new one; one that left the chain is forgotten")
    func renewal() {
        var check = ExpiryCheck(thresholds: [.seconds(30 * 86_400)])
        let old = certificate("leaf", days: 5)
        #expect(check.check(chain: [old], now: now).count == 1)
        var renewed = old
        renewed.notAfter = now.addingTimeInterval(25 * Self.day)
        #expect(check.check(chain: [renewed], now: now).map(\.daysLeft) == [25])
        #expect(check.check(chain: [old], now: now).map(\.daysLeft) == [5])
        #expect(check.check(chain: [old], now: now).isEmpty)
    }

    @Test("A handshake's verified chain warns only once a certificate is within a threshold, identified by its fingerprint")
    func verifiedChain() throws {
        let pki = TestPKI.shared
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["valid", "inter"]), host: "valid.test", trustStore: try pki.trustStore())
        let chain = evaluation.verifiedChain
        try #require(chain.count >= 2 && evaluation.failure == nil)
        let leafExpiry = try #require(chain.map(\.notAfter).min())
        var check = ExpiryCheck(thresholds: Self.fourThresholds)
        // Long before: nothing within 30 days, so nothing to warn about or remember.
        #expect(check.check(evaluation, now: leafExpiry.addingTimeInterval(-60 * Self.day)).isEmpty)
        // Twelve days before the earliest expiry: that certificate warns for 14d, at its depth, once.
        let near = leafExpiry.addingTimeInterval(-12 * Self.day)
        let warnings = check.check(evaluation, now: near)
        let expiring = chain.enumerated().filter { $0.element.notAfter == leafExpiry }
        #expect(warnings.map(\.depth) == expiring.map(\.offset))
        #expect(warnings.map(\.certificate.identity) == expiring.map(\.element.sha256Fingerprint))
        #expect(warnings.map(\.threshold) == expiring.map { _ in .seconds(14 * 86_400) })
        #expect(check.check(evaluation, now: near).isEmpty)
        // A chain outside every threshold again (say, the clock was wrong) is forgotten, as a renewal is.
        #expect(check.check(evaluation, now: leafExpiry.addingTimeInterval(-60 * Self.day)).isEmpty)
        #expect(check.check(evaluation, now: near).map(\.depth) == expiring.map(\.offset))
    }

    @Test("An expired certificate of an anchored chain is reported once, even when the chain comes and goes, never as an expiring warning")
    func expired() {
        var check = ExpiryCheck(thresholds: Self.fourThresholds)
        let leaf = certificate("leaf", days: -4.5)
        let intermediate = certificate("intermediate", days: 400)
        #expect(check.check(chain: [leaf, intermediate], now: now).isEmpty)
        let first = check.expired(anchoredChain: [leaf, intermediate], now: now)
        #expect(first.map(\.certificate.subject) == ["CN=leaf"])
        #expect(first.map(\.depth) == [0])
        #expect(first.map(\.daysExpired) == [4])
        #expect(check.expired(anchoredChain: [leaf, intermediate], now: now).isEmpty)
        // Gone and back (a server alternating two chains): still remembered, no new report.
        let other = certificate("other", days: -2)
        #expect(check.expired(anchoredChain: [other, intermediate], now: now).map(\.certificate.subject) == ["CN=other"])
        #expect(check.expired(anchoredChain: [leaf, intermediate], now: now).isEmpty)
        #expect(check.expired(anchoredChain: [other, intermediate], now: now).isEmpty)
    }

    @Test("ATTACK: the memory of reported expired certificates is bounded; the least recently seen is forgotten first")
    func expiredMemoryBounded() {
        var check = ExpiryCheck(thresholds: Self.fourThresholds)
        let kept = certificate("kept", days: -1)
        let flood = (0..<(3 * ExpiryCheck.expiredMemory)).map { certificate("flood-\($0)", days: -1) }
        #expect(check.expired(anchoredChain: [kept], now: now).count == 1)
        for (index, certificate) in flood.enumerated() {
            #expect(check.expired(anchoredChain: [certificate], now: now).count == 1)
            // Seen again now and then, `kept` stays among the most recent and is never reported again.
            if index % 8 == 0 { #expect(check.expired(anchoredChain: [kept], now: now).isEmpty) }
        }
        // The flood's first certificates were forgotten: reported again, once.
        #expect(check.expired(anchoredChain: [flood[0]], now: now).count == 1)
        #expect(check.expired(anchoredChain: [flood[0]], now: now).isEmpty)
    }

    @Test("A chain that did not validate warns about nothing: an expired leaf's handshake says tls_expired, not expiring")
    func invalidChain() throws {
        let pki = TestPKI.shared
        let evaluation = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["expired", "inter"]), host: "valid.test", trustStore: try pki.trustStore())
        #expect(!evaluation.chainValidated)
        #expect(evaluation.failure?.isOutsideValidity == true, "\(String(describing: evaluation.failure))")
        var check = ExpiryCheck(thresholds: Self.fourThresholds)
        #expect(check.check(evaluation, now: Date()).isEmpty)
        #expect(check.expired(evaluation, now: Date()).map(\.depth) == [0])
    }

    @Test("ATTACK: an expired chain that reaches no anchor, or is for another host, reports no expired certificate")
    func unanchoredExpiredChain() throws {
        let pki = TestPKI.shared
        // The right chain, for another host; and the same chain against a store without its root.
        let wrongHost = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["expired", "inter"]), host: "other.test", trustStore: try pki.trustStore())
        let noAnchor = try SecurityPolicy(mode: .none).evaluate(
            servedChain: try pki.chain(["expired", "inter"]), host: "valid.test",
            trustStore: try TrustStore(certificates: try pki.chain(["valid"])))
        for evaluation in [wrongHost, noAnchor] {
            #expect(!evaluation.chainIsAnchoredForHost)
            #expect(evaluation.failure?.isOutsideValidity == false, "\(String(describing: evaluation.failure))")
            var check = ExpiryCheck(thresholds: Self.fourThresholds)
            #expect(check.expired(evaluation, now: Date()).isEmpty)
        }
    }
}
