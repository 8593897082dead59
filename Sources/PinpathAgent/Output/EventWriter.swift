import Glibc
import Synchronization

/// Writes events as JSON lines in pinpath's envelope:
/// `{"schema":"pinpath/1","time":"<RFC 3339 UTC, µs>","seq":N,"event":"<type>",…fields}`.
///
/// Each line goes out in one `write(2)`, so a reader never sees half a line from this writer, and `seq`
/// counts up from 1 with no gaps, so a consumer can tell when lines were lost downstream. Writes happen on
/// the caller's thread and block while the output blocks: what `pinpath watch` wants. The agent uses
/// ``AsyncEventWriter``, which never blocks its caller.
public final class EventWriter: Sendable {
    /// The envelope's `schema` value.
    public static let schema = "pinpath/1"

    private let output: LineOutput
    /// The last `seq` written, with the buffer a line is assembled in (kept to avoid an allocation per line).
    private let state = Mutex((seq: 0, buffer: [UInt8]()))

    /// - Parameter output: where lines go; standard output by default.
    public init(output: LineOutput = LineOutput()) {
        self.output = output
    }

    /// Writes one event line. Thread-safe; concurrent callers are serialized, so `seq` follows line order.
    /// - Throws: `EventWriterError` when the output is gone (a closed pipe) or full. The line is then not
    ///   written and uses no `seq`.
    public func write(event: String, fields: [(String, JSONValue)]) throws(EventWriterError) {
        let body = EventLine.body(event: event, fields: fields)
        try state.withLock { state throws(EventWriterError) in
            // The time is read under the lock so that times, like seq, never go backwards between lines.
            EventLine.assemble(seq: state.seq + 1, time: UTCTime.now(), body: body, into: &state.buffer)
            try output.write(state.buffer)
            state.seq += 1
        }
    }
}

/// The envelope's encoding, shared by ``EventWriter`` and ``AsyncEventWriter``.
///
/// A line is split in two so `seq` can be given when the line is written rather than when it is produced:
/// the *body* (`{"event":…,…fields}`) is encoded by the producer, and ``assemble(seq:time:body:into:)``
/// puts the envelope's head in front of it.
enum EventLine {
    /// `{"event":"<type>",…fields}`: the part of a line that does not depend on `seq`.
    static func body(event: String, fields: [(String, JSONValue)]) -> String {
        var body = ""
        body.reserveCapacity(256)
        JSONValue.object([("event", .string(event))] + fields).encode(into: &body)
        return body
    }

    /// Replaces `buffer` with the whole line, newline included:
    /// `{"schema":"pinpath/1","time":"…","seq":N,` followed by `body` without its opening brace.
    static func assemble(seq: Int, time: String, body: String, into buffer: inout [UInt8]) {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: #"{"schema":""#.utf8)
        buffer.append(contentsOf: EventWriter.schema.utf8)
        buffer.append(contentsOf: #"","time":""#.utf8)
        buffer.append(contentsOf: time.utf8)
        buffer.append(contentsOf: #"","seq":"#.utf8)
        appendDecimal(seq, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        buffer.append(contentsOf: body.utf8.dropFirst())
        buffer.append(UInt8(ascii: "\n"))
    }

    /// The whole line as a string, for tests and callers that want one.
    static func line(seq: Int, time: String, event: String, fields: [(String, JSONValue)]) -> String {
        var buffer: [UInt8] = []
        assemble(seq: seq, time: time, body: body(event: event, fields: fields), into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Writes the digits straight into the buffer: `String(seq)` would allocate once per line.
    private static func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
        if value < 0 {
            buffer.append(UInt8(ascii: "-"))
            appendDecimal(-value, to: &buffer)
            return
        }
        let start = buffer.count
        var value = value
        repeat {
            buffer.append(UInt8(ascii: "0") + UInt8(value % 10))
            value /= 10
        } while value > 0
        buffer[start...].reverse()
    }
}
