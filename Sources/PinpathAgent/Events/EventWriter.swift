import Glibc
import Synchronization

/// Writes events as JSON lines in pinpath's envelope:
/// `{"schema":"pinpath/1","time":"<RFC 3339 UTC, µs>","seq":N,"event":"<type>",…fields}`.
///
/// Each line goes out in one `write(2)`, so a reader never sees half a line from this writer, and `seq`
/// counts up from 1 with no gaps, so a consumer can tell when lines were lost downstream.
public final class EventWriter: Sendable {
    public static let schema = "pinpath/1"

    private let output: LineOutput
    private let sequence = Mutex(0)

    public init(output: LineOutput = LineOutput()) {
        self.output = output
    }

    /// Writes one event line.
    /// - Throws: `EventWriterError` when the output is gone (a closed pipe) or full.
    public func write(event: String, fields: [(String, JSONValue)]) throws(EventWriterError) {
        try sequence.withLock { seq throws(EventWriterError) in
            let line = Self.line(seq: seq + 1, time: EventTime.now(), event: event, fields: fields)
            try output.write(line)
            seq += 1
        }
    }

    static func line(seq: Int, time: String, event: String, fields: [(String, JSONValue)]) -> String {
        var line = JSONValue.object(
            [("schema", .string(schema)), ("time", .string(time)), ("seq", .int(seq)), ("event", .string(event))]
                + fields
        ).encoded()
        line += "\n"
        return line
    }
}

/// A file descriptor that takes whole lines: each goes out in one `write(2)` (retried on EINTR and short
/// writes), unbuffered, so a line is visible to a reader as soon as it is written.
public struct LineOutput: Sendable {
    public let descriptor: Int32

    /// - Parameter descriptor: standard output by default. Not closed here.
    public init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
    }

    /// Writes `line`, which should end with a newline.
    public func write(_ line: String) throws(EventWriterError) {
        var line = line
        let failure = line.withUTF8 { write($0) }
        if let failure { throw EventWriterError(errno: failure) }
    }

    /// Writes raw bytes (a response body) in as few `write(2)` calls as the descriptor allows.
    public func write(bytes: [UInt8]) throws(EventWriterError) {
        let failure = bytes.withUnsafeBufferPointer { write($0) }
        if let failure { throw EventWriterError(errno: failure) }
    }

    /// Writes everything, retrying EINTR and short writes; returns errno on failure.
    private func write(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}

/// The event output failed: `errno` says how (EPIPE for a closed pipe, ENOSPC for a full disk).
public struct EventWriterError: Error, Sendable, CustomStringConvertible {
    public let errno: Int32
    public var description: String { "cannot write an event: \(String(cString: strerror(errno)))" }
}
