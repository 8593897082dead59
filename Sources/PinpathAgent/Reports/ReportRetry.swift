import PinpathHTTP

/// How a report is tried and tried again: a few attempts, exponential backoff with jitter between them, and
/// which failures are worth another try.
struct ReportRetry: Sendable {
    /// Tries per report, the first included. Default 3.
    var attempts = 3
    /// The wait after the first failed try, before jitter; it doubles after each further one. Default 1 s.
    var firstDelay = Duration.seconds(1)
    /// The longest wait between two tries. Default 30 s.
    var maximumDelay = Duration.seconds(30)

    /// The wait after `failed` tries (from 1): `firstDelay`·2^(failed−1), capped at `maximumDelay`, of which
    /// `random` (in 0...1) keeps the second half ("equal jitter"), so agents whose collector failed at the same
    /// moment do not all retry at the same moment, and no wait is shorter than half its step.
    func delay(afterFailedTries failed: Int, random: Double) -> Duration {
        let doublings = min(max(failed - 1, 0), 30)
        let step = min(firstDelay * (1 << doublings), maximumDelay)
        return step / 2 + step / 2 * min(max(random, 0), 1)
    }

    /// Whether a request that failed with `code` may succeed if tried again: a collector that is unreachable,
    /// slow or restarting may; one whose certificate its policy refused (a pin mismatch, an invalid chain) is not
    /// tried again, so nothing more is offered to a server that may be an impostor.
    static func isTransient(_ code: HTTPError.Code) -> Bool {
        [.unreachable, .resolveFailed, .connectFailed, .timedOut, .protocolError, .tlsFailed, .transferFailed].contains(code)
    }

    /// Whether a collector's answer with `status` may change if tried again: 408 (timeout), 429 (rate
    /// limited) and 5xx. Other statuses are its final word on this report.
    static func isTransient(status: Int) -> Bool { status == 408 || status == 429 || (500...599).contains(status) }
}
