import Glibc
import PinpathHTTP
import PinpathSupport
import Synchronization

/// The progress bar of `pinpath request -o` (the download) and `-T` (the upload) on standard error: the share
/// done, a bar, the bytes done and expected, the rate and the time left, redrawn in place (`\r`, erase to the
/// end of the line) at most every 100 ms and cleared when the transfer ends.
///
/// Drawn only when standard error is a terminal and the output is not `--json` (``ifWanted(json:)``): a script
/// gets no carriage returns in its logs. It shows numbers only, no text from the server or the URL.
///
/// `update` is called on the session's libcurl thread, `finish` on the command's task: the state is behind a
/// `Mutex`.
final class ProgressBar: Sendable {
    private struct State {
        /// The first report: the rate is counted from it, so a resumed part does not inflate it.
        var first: (time: ContinuousClock.Instant, bytes: Int64)?
        var lastDrawn: ContinuousClock.Instant?
        var drawn = false
    }

    private let state = Mutex(State())
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    /// A bar on standard error when it is a terminal and `json` is off; `nil` otherwise.
    static func ifWanted(json: Bool) -> ProgressBar? {
        guard !json, isatty(STDERR_FILENO) == 1 else { return nil }
        return ProgressBar(descriptor: STDERR_FILENO)
    }

    /// Redraws the line with the bytes done and expected (a download's, or an upload's bytes sent), unless it
    /// was drawn less than 100 ms ago and the transfer is not complete.
    func update(bytes: Int64, expected: Int64?) {
        // Before the head (or the first byte sent) there is nothing to show yet (no byte, no length).
        guard bytes > 0 || expected != nil else { return }
        let now = ContinuousClock.now
        let line: String? = state.withLock { state in
            let first = state.first ?? (now, bytes)
            state.first = first
            let complete = expected.map { bytes >= $0 } ?? false
            if let last = state.lastDrawn, now - last < .milliseconds(100), !complete { return nil }
            state.lastDrawn = now
            state.drawn = true
            let elapsed = (now - first.time).inSeconds
            let rate = elapsed >= 0.2 ? Double(bytes - first.bytes) / elapsed : nil
            return Self.line(bytes: bytes, expected: expected, bytesPerSecond: rate)
        }
        if let line { draw("\r\(line)\u{1B}[K") }
    }

    /// Clears the line, if one was drawn.
    func finish() {
        let drawn = state.withLock { state in
            defer { state.drawn = false }
            return state.drawn
        }
        if drawn { draw("\r\u{1B}[K") }
    }

    private func draw(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }  // a terminal gone: the transfer goes on without its bar
            bytes = bytes.dropFirst(written)
        }
    }

    /// ` 45% [=========>          ]  12.3 MiB / 27.0 MiB  4.2 MiB/s  ETA 0:04` (no share, bar or ETA when the
    /// length is unknown; no rate or ETA in the first 200 ms). At most 79 columns.
    static func line(bytes: Int64, expected: Int64?, bytesPerSecond rate: Double?) -> String {
        var parts: [String] = []
        if let expected, expected > 0 {
            let share = min(1, Double(bytes) / Double(expected))
            let width = 20
            let filled = Int(share * Double(width))
            let bar =
                String(repeating: "=", count: filled) + (filled < width ? ">" + String(repeating: " ", count: width - filled - 1) : "")
            parts.append("\(pad(String(Int(share * 100)), to: 3))% [\(bar)]")
            parts.append("\(size(bytes)) / \(size(expected))")
        } else {
            parts.append(size(bytes))
        }
        if let rate, rate.isFinite, rate > 0, rate < Double(Int64.max) {
            parts.append("\(size(Int64(rate)))/s")
            if let expected, expected > bytes {
                parts.append("ETA \(duration(Double(expected - bytes) / rate))")
            }
        }
        return parts.joined(separator: "  ")
    }

    /// `512 B`, `12.3 KiB`, `4.0 MiB`, `1.2 GiB`.
    static func size(_ bytes: Int64) -> String {
        guard bytes >= 1024 else { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        for unit in ["KiB", "MiB", "GiB"] {
            if value < 1024 || unit == "GiB" { return "\(tenths(value)) \(unit)" }
            value /= 1024
        }
        return "\(tenths(value)) GiB"
    }

    /// `0:04`, `12:30`, `1:02:03`; `--:--` beyond 100 hours.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 360_000 else { return "--:--" }
        let total = Int(seconds.rounded(.up))
        let (hours, minutes, rest) = (total / 3600, total / 60 % 60, total % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }

    private static func tenths(_ value: Double) -> String {
        let scaled = Int((value * 10).rounded())
        return "\(scaled / 10).\(scaled % 10)"
    }

    private static func pad(_ text: String, to width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
