import Glibc
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
        try writer.write(event: "test.two", fields: [])
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fds[0], &buffer, buffer.count)
        let lines = String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix(#"{"schema":"pinpath/1","time":""#))
        #expect(lines[0].hasSuffix(#"","seq":1,"event":"test.one","k":"v"}"#))
        #expect(lines[1].hasSuffix(#"","seq":2,"event":"test.two"}"#))
    }

    @Test("A closed reader is reported as EPIPE, not a crash")
    func closedPipe() {
        signal(SIGPIPE, SIG_IGN)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        #expect(throws: EventWriterError.self) { try LineOutput(descriptor: fds[1]).write("x\n") }
    }
}
