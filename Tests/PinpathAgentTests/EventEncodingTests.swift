import FoundationEssentials
import Glibc
import PinpathSupport
import Testing

@testable import PinpathAgent

@Suite("Event encoding")
struct EventEncodingTests {
    @Test("JSON keeps key order and escapes what it must")
    func json() {
        let value = JSONValue.object([
            ("b", 1), ("a", "x\"y\\z\n\u{1}\u{2028}é"), ("n", .null), ("l", .array([true, .double(1.5)])),
        ])
        #expect(value.encoded() == #"{"b":1,"a":"x\"y\\z\n\u0001\u2028é","n":null,"l":[true,1.5]}"#)
    }

    /// Issue 25, item 3: a message quotes what a server sent (a redirect hop's URL, its certificates' names).
    @Test("A probe's message from outside keeps its characters but not its size: cut at UntrustedText's limit")
    func messageCapped() throws {
        var result = ProbeResult(endpoint: "api", outcome: .failure, started: Date())
        result.message = "GET http://" + String(repeating: "a", count: 100_000) + "\u{1B}/: failed"
        let event = AgentEvents.probeCompleted(result, connectivity: nil)
        let message = try #require(event.fields.first { $0.0 == "message" }?.1)
        // "GET http://" is 11 characters of the 4,096 kept.
        #expect(message == .string("GET http://" + String(repeating: "a", count: 4096 - 11) + "…"))
        let short = AgentEvents.outsideText("x\u{1B}[2K")
        #expect(short == .string("x\u{1B}[2K"), "JSON keeps a short text exact: its encoder escapes")
    }

    @Test("Times are RFC 3339 UTC with microseconds")
    func time() {
        #expect(UTCTime.format(seconds: 0, microseconds: 7) == "1970-01-01T00:00:00.000007Z")
        #expect(UTCTime.format(seconds: 1_795_392_000, microseconds: 123_456) == "2026-11-23T00:00:00.123456Z")
        #expect(UTCTime.now().count == "2026-11-23T00:00:00.123456Z".count)
    }

    @Test("Each event is one line in the envelope, seq counting from 1")
    func envelope() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let writer = EventWriter(output: LineOutput(descriptor: fds[1]))
        try writer.write(event: "test.one", fields: [("k", "v")])
        try writer.write(event: "test.two", level: .error, fields: [])
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fds[0], &buffer, buffer.count)
        let lines = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix(#"{"schema":"pinpath/1","time":""#))
        #expect(lines[0].hasSuffix(#"","seq":1,"event":"test.one","level":"info","k":"v"}"#))
        #expect(lines[1].hasSuffix(#"","seq":2,"event":"test.two","level":"error"}"#))
    }

    @Test("journald's priority prefix and the host field, each only when the format asks for it")
    func lineFormats() {
        let plain = EventLine.line(seq: 7, time: "T", event: "e", level: .warning, fields: [("k", 1)])
        #expect(plain == #"{"schema":"pinpath/1","time":"T","seq":7,"event":"e","level":"warning","k":1}"# + "\n")
        let journal = EventLine.line(
            seq: 7, time: "T", event: "e", level: .warning, fields: [], format: EventLineFormat(syslogPrefix: true))
        #expect(journal == #"<4>{"schema":"pinpath/1","time":"T","seq":7,"event":"e","level":"warning"}"# + "\n")
        let error = EventLine.line(seq: 1, time: "T", event: "e", level: .error, fields: [], format: EventLineFormat(syslogPrefix: true))
        #expect(error.hasPrefix("<3>{"))
        let file = EventLine.line(seq: 7, time: "T", event: "e", fields: [], format: EventLineFormat(host: "web-1\"x"))
        #expect(file == #"{"schema":"pinpath/1","time":"T","seq":7,"host":"web-1\"x","event":"e","level":"info"}"# + "\n")
    }

    @Test("Standard output is the journal only when JOURNAL_STREAM names its device and inode")
    func journalStream() {
        var status = stat()
        #expect(fstat(STDOUT_FILENO, &status) == 0)
        let stream = "\(status.st_dev):\(status.st_ino)"
        #expect(EventLineFormat.standardOutput(environment: ["JOURNAL_STREAM": stream]).syslogPrefix)
        #expect(!EventLineFormat.standardOutput(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]).syslogPrefix)
        #expect(!EventLineFormat.standardOutput(environment: ["JOURNAL_STREAM": "garbage"]).syslogPrefix)
        #expect(!EventLineFormat.standardOutput(environment: [:]).syslogPrefix)
        #expect(EventLineFormat.file().host?.isEmpty == false)
    }

    @Test("A closed reader is reported as EPIPE, not a crash")
    func closedPipe() {
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        #expect(throws: OutputError.self) { try LineOutput(descriptor: fds[1]).write("x\n") }
    }
}
