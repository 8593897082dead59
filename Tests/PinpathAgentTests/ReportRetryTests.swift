import PinpathHTTP
import Testing

@testable import PinpathAgent

/// The backoff between tries of a pin failure report, and which failures are tried again (pure logic).
@Suite("Report retry")
struct ReportRetryTests {
    @Test("Each wait is between half and all of its step; steps double from the first delay up to the cap")
    func backoff() {
        let retry = ReportRetry(attempts: 8, firstDelay: .seconds(1), maximumDelay: .seconds(5))
        let steps: [Duration] = [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)]
        for (index, step) in steps.enumerated() {
            #expect(retry.delay(afterFailedTries: index + 1, random: 0) == step / 2)
            #expect(retry.delay(afterFailedTries: index + 1, random: 1) == step)
            let middle = retry.delay(afterFailedTries: index + 1, random: 0.5)
            #expect(middle > step / 2 && middle < step)
        }
        #expect(retry.delay(afterFailedTries: 1000, random: 1) == .seconds(5), "no overflow for a large count")
    }

    @Test("Unreachable, slow or failing collectors are tried again; refused ones and final answers are not")
    func transient() {
        for code: HTTPError.Code in [.unreachable, .resolveFailed, .connectFailed, .timedOut, .protocolError, .tlsFailed] {
            #expect(ReportRetry.isTransient(code), "\(code)")
        }
        for code: HTTPError.Code in [.policyRejected, .tlsInvalid, .invalidURL, .cancelled, .insecureRedirect] {
            #expect(!ReportRetry.isTransient(code), "\(code)")
        }
        #expect([408, 429, 500, 502, 503, 599].allSatisfy(ReportRetry.isTransient(status:)))
        #expect(![301, 400, 401, 403, 404, 413].contains(where: ReportRetry.isTransient(status:)))
    }
}
