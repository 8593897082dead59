import Glibc
import PinpathSupport
import Synchronization

/// Writes events as JSON lines in pinpath's envelope:
/// `{"schema":"pinpath/1","time":"<RFC 3339 UTC, µs>","seq":N,"event":"<type>","level":"<level>",…fields}`,
/// with what the line's ``EventLineFormat`` adds (`<N>` in front for journald, `"host"` after `seq`).
///
/// Each line goes out in one `write(2)`, so a reader never sees half a line from this writer, and `seq`
/// counts up from 1 with no gaps, so a consumer can tell when lines were lost downstream. Writes happen on
/// the caller's thread and block while the output blocks: what `pinpath watch` wants. The agent uses
/// ``EventWriterThread``, which never blocks its caller.
package final class EventWriter: Sendable {
    /// The envelope's `schema` value.
    package static let schema = "pinpath/1"

    private let output: LineOutput
    private let format: EventLineFormat
    /// The last `seq` written, with the buffer a line is assembled in (kept to avoid an allocation per line).
    private let state = Mutex((seq: 0, buffer: [UInt8]()))

    /// - Parameters:
    ///   - output: where lines go; standard output by default.
    ///   - format: the prefix and envelope fields the destination wants; none by default.
    package init(output: LineOutput = LineOutput(), format: EventLineFormat = EventLineFormat()) {
        self.output = output
        self.format = format
    }

    /// Writes one event line. Thread-safe; concurrent callers are serialized, so `seq` follows line order.
    /// - Throws: `OutputError` when the output is gone (a closed pipe) or full. The line is then not
    ///   written and uses no `seq`.
    package func write(event: String, level: EventLevel = .info, fields: [(String, JSONValue)]) throws(OutputError) {
        let body = EventLine.body(event: event, level: level, fields: fields)
        try state.withLock { state throws(OutputError) in
            // The time is read under the lock so that times, like seq, never go backwards between lines.
            EventLine.assemble(
                seq: state.seq + 1, time: UTCTime.now(), body: body, level: level, format: format, into: &state.buffer)
            try output.write(state.buffer)
            state.seq += 1
        }
    }
}

/// The envelope's encoding, shared by ``EventWriter`` and ``EventWriterThread``.
///
/// A line is split in two so `seq` can be given when the line is written rather than when it is produced:
/// the *body* (`{"event":…,"level":…,…fields}`) is encoded by the producer, and
/// ``assemble(seq:time:body:level:format:into:)`` puts the envelope's head in front of it.
enum EventLine {
    /// `{"event":"<type>","level":"<level>",…fields}`: the part of a line that does not depend on `seq`.
    static func body(event: String, level: EventLevel, fields: [(String, JSONValue)]) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(512)
        body.append(contentsOf: #"{"event":"#.utf8)
        JSONValue.string(event).encode(into: &body)
        body.append(contentsOf: #","level":"#.utf8)
        JSONValue.string(level.name).encode(into: &body)
        // The fields are encoded as an object of their own and its `{` becomes the `,` after `level`: the
        // fields are not copied into a new array behind `event` and `level`.
        if fields.isEmpty {
            body.append(UInt8(ascii: "}"))
        } else {
            let fieldsStart = body.count
            JSONValue.object(fields).encode(into: &body)
            body[fieldsStart] = UInt8(ascii: ",")
        }
        return body
    }

    /// Replaces `buffer` with the whole line, newline included: `<N>` when the format asks for it, then
    /// `{"schema":"pinpath/1","time":"…","seq":N,` (and `"host":"…",`) followed by `body` without its opening
    /// brace.
    static func assemble(
        seq: Int, time: String, body: [UInt8], level: EventLevel, format: EventLineFormat, into buffer: inout [UInt8]
    ) {
        buffer.removeAll(keepingCapacity: true)
        if format.syslogPrefix {
            buffer.append(UInt8(ascii: "<"))
            appendDecimal(level.syslogPriority, to: &buffer)
            buffer.append(UInt8(ascii: ">"))
        }
        buffer.append(contentsOf: #"{"schema":""#.utf8)
        buffer.append(contentsOf: EventWriter.schema.utf8)
        buffer.append(contentsOf: #"","time":""#.utf8)
        buffer.append(contentsOf: time.utf8)
        buffer.append(contentsOf: #"","seq":"#.utf8)
        appendDecimal(seq, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        buffer.append(contentsOf: format.hostField)
        buffer.append(contentsOf: body.dropFirst())
        buffer.append(UInt8(ascii: "\n"))
    }

    /// The whole line as a string, for tests and callers that want one.
    static func line(
        seq: Int, time: String, event: String, level: EventLevel = .info, fields: [(String, JSONValue)],
        format: EventLineFormat = EventLineFormat()
    ) -> String {
        var buffer: [UInt8] = []
        assemble(seq: seq, time: time, body: body(event: event, level: level, fields: fields), level: level, format: format, into: &buffer)
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
