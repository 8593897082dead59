import FoundationEssentials
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

    @Test("Only certificates within the window warn, with their depth and whole days left")
    func window() {
        var check = ExpiryCheck(window: .seconds(30 * 86_400))
        let chain = [certificate("leaf", days: 10.5), certificate("intermediate", days: 400), certificate("root", days: 30)]
        let warnings = check.check(chain: chain, now: now)
        #expect(warnings.map(\.certificate.subject) == ["CN=leaf", "CN=root"])
        #expect(warnings.map(\.depth) == [0, 2])
        #expect(warnings.map(\.daysLeft) == [10, 30])
    }

    @Test("A certificate warns when it enters the window, then once a day, not on every probe")
    func daily() {
        var check = ExpiryCheck(window: .seconds(30 * 86_400))
        let leaf = certificate("leaf", days: 30.2)
        func warn(after days: Double) -> [Int] {
            check.check(chain: [leaf], now: now.addingTimeInterval(days * Self.day)).map(\.daysLeft)
        }
        #expect(warn(after: 0) == [])
        #expect(warn(after: 0.25) == [29])
        #expect(warn(after: 0.5) == [])
        #expect(warn(after: 1.1) == [])
        #expect(warn(after: 1.25) == [28])
        #expect(warn(after: 5) == [25])
        #expect(warn(after: 30.1) == [0])
        #expect(warn(after: 30.15) == [])
        #expect(warn(after: 30.3) == [-1])
    }

    @Test("A renewed certificate is a new one; one that left the chain is forgotten")
    func renewal() {
        var check = ExpiryCheck(window: .seconds(30 * 86_400))
        let old = certificate("leaf", days: 5)
        #expect(check.check(chain: [old], now: now).count == 1)
        var renewed = old
        renewed.notAfter = now.addingTimeInterval(25 * Self.day)
        #expect(check.check(chain: [renewed], now: now).map(\.daysLeft) == [25])
        #expect(check.check(chain: [old], now: now).map(\.daysLeft) == [5])
        #expect(check.check(chain: [old], now: now).isEmpty)
    }
}
