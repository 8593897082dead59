import Dispatch
import Foundation
import Glibc
import PinpathSupport
import Synchronization
import Testing

@testable import PinpathAgent

/// A sink that keeps its lines, fails while told to, and can hold a write until released, as a reader
/// that stopped reading would.
final class ScriptedSink: EventSink, Sendable {
    private struct State {
        var lines: [String] = []
        var failing: Int32?
        var reopens = 0
    }
    private let state = Mutex(State())
    /// While closed, writes wait for it.
    private let gate = DispatchSemaphore(value: 0)
    private let gated: Bool
    /// Signalled each time a write starts.
    let entered = DispatchSemaphore(value: 0)

    init(gated: Bool = false) { self.gated = gated }

    var lines: [String] { state.withLock { $0.lines } }
    var reopens: Int { state.withLock { $0.reopens } }
    func fail(with errno: Int32?) { state.withLock { $0.failing = errno } }
    func release() { for _ in 0..<1000 { gate.signal() } }

    func write(_ line: UnsafeRawBufferPointer) throws(OutputError) {
        entered.signal()
        if gated { gate.wait() }
        let failure = state.withLock { state -> Int32? in
            if let failing = state.failing { return failing }
            state.lines.append(String(decoding: line, as: UTF8.self))
            return nil
        }
        if let failure { throw OutputError(errno: failure) }
    }

    func reopen() throws(OutputError) { state.withLock { $0.reopens += 1 } }
}

/// The parts of an event line the tests look at.
struct ParsedLine: Equatable {
    var seq: Int
    var event: String
    var rest: String

    init(_ line: some StringProtocol) {
        // {"schema":"pinpath/1","time":"…","seq":N,"event":"E","level":"L"…}: the level is left out of `rest`
        // (the writer passes on whatever level it is given; the event encoding tests check it).
        let afterSeq = line.split(separator: #""seq":"#, maxSplits: 1)[1]
        seq = Int(afterSeq.prefix { $0.isNumber })!
        let afterEvent = afterSeq.split(separator: #""event":""#, maxSplits: 1)[1]
        event = String(afterEvent.prefix { $0 != "\"" })
        let afterLevel = afterEvent.drop { $0 != "\"" }.dropFirst().split(
            separator: #","level":""#, maxSplits: 1, omittingEmptySubsequences: false)[1]
        rest = String(afterLevel.drop { $0 != "\"" }.dropFirst())
    }

    init(seq: Int, event: String, rest: String = "}\n") {
        (self.seq, self.event, self.rest) = (seq, event, rest)
    }
}

@Suite("Event writer thread")
struct EventWriterThreadTests {
    @Test("Lines go out whole, in order, seq counting from 1, with the envelope of the synchronous writer")
    func order() throws {
        let sink = ScriptedSink()
        let writer = EventWriterThread(sink: sink)
        for index in 0..<100 { #expect(writer.emit(event: "test.line", fields: [("n", .int(index))])) }
        #expect(writer.flush(timeout: .seconds(10)))
        let lines = sink.lines
        #expect(lines.count == 100)
        #expect(lines.map { ParsedLine($0).seq } == Array(1...100))
        #expect(lines.last?.hasPrefix(#"{"schema":"pinpath/1","time":""#) == true)
        #expect(lines.last?.hasSuffix(#"","seq":100,"event":"test.line","level":"info","n":99}"# + "\n") == true)
        let time = try #require(lines.first?.split(separator: #""time":""#)[1].prefix(27))
        #expect(lines.first == EventLine.line(seq: 1, time: String(time), event: "test.line", fields: [("n", 0)]))
        #expect(writer.statistics == .init(accepted: 100, written: 100, droppedQueueFull: 0, droppedWriteFailed: 0))
        #expect(writer.close(timeout: .seconds(10)))
    }

    @Test("Concurrent producers: every line once, seq with no gaps, each producer's lines in its order")
    func concurrent() {
        let sink = ScriptedSink()
        let writer = EventWriterThread(sink: sink)
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            for index in 0..<1000 { writer.emit(event: "p\(producer)", fields: [("n", .int(index))]) }
        }
        #expect(writer.close(timeout: .seconds(10)))
        let lines = sink.lines.map(ParsedLine.init)
        #expect(lines.map(\.seq) == Array(1...4000))
        for producer in 0..<4 {
            let own = lines.filter { $0.event == "p\(producer)" }.map(\.rest)
            #expect(own == (0..<1000).map { #","n":\#($0)}"# + "\n" })
        }
    }

    @Test("A full queue drops and counts without blocking; the report follows the lines queued before it")
    func queueFull() {
        let sink = ScriptedSink(gated: true)
        let writer = EventWriterThread(sink: sink, capacity: 3)
        #expect(writer.emit(event: "a", fields: []))
        sink.entered.wait()  // "a" is being written, and counts toward the capacity until it is done
        #expect(writer.emit(event: "b", fields: []))
        #expect(writer.emit(event: "c", fields: []))
        #expect(!writer.emit(event: "d", fields: []))
        #expect(!writer.emit(event: "e", fields: []))
        #expect(writer.statistics.droppedQueueFull == 2)
        sink.release()
        #expect(writer.flush(timeout: .seconds(10)))
        #expect(writer.emit(event: "f", fields: []))
        #expect(writer.close(timeout: .seconds(10)))
        #expect(
            sink.lines.map(ParsedLine.init) == [
                ParsedLine(seq: 1, event: "a"), ParsedLine(seq: 2, event: "b"), ParsedLine(seq: 3, event: "c"),
                ParsedLine(seq: 4, event: "events.dropped", rest: #","count":2,"reason":"queue_full","error":null}"# + "\n"),
                ParsedLine(seq: 5, event: "f"),
            ])
        #expect(writer.statistics == .init(accepted: 4, written: 5, droppedQueueFull: 2, droppedWriteFailed: 0))
    }

    @Test("Lines the sink refuses are counted, and reported before the first line that goes out again")
    func writeFailures() {
        let sink = ScriptedSink()
        let writer = EventWriterThread(sink: sink)
        writer.emit(event: "before", fields: [])
        #expect(writer.flush(timeout: .seconds(10)))
        sink.fail(with: ENOSPC)
        writer.emit(event: "lost", fields: [])
        writer.emit(event: "lost", fields: [])
        #expect(writer.flush(timeout: .seconds(10)))
        #expect(writer.statistics.droppedWriteFailed == 2)
        sink.fail(with: nil)
        writer.emit(event: "after", fields: [])
        #expect(writer.close(timeout: .seconds(10)))
        #expect(
            sink.lines.map(ParsedLine.init) == [
                ParsedLine(seq: 1, event: "before"),
                ParsedLine(seq: 2, event: "events.dropped", rest: #","count":2,"reason":"write_failed","error":"ENOSPC"}"# + "\n"),
                ParsedLine(seq: 3, event: "after"),
            ])
    }

    @Test("time never goes backwards: concurrent producers, and drop reports written after the lines they follow")
    func monotonicTime() {
        // Producers race: a time read before the queue's lock let a later line go out ahead of an earlier one
        // (the network-fault storm saw 12 ms backwards under load).
        let sink = ScriptedSink()
        let writer = EventWriterThread(sink: sink)
        DispatchQueue.concurrentPerform(iterations: 4) { producer in
            for index in 0..<2000 { writer.emit(event: "p\(producer)", fields: [("n", .int(index))]) }
        }
        // A report of failed writes goes out before the next line: it must not be later than that line.
        #expect(writer.flush(timeout: .seconds(10)))
        sink.fail(with: ENOSPC)
        writer.emit(event: "lost", fields: [])
        #expect(writer.flush(timeout: .seconds(10)))
        sink.fail(with: nil)
        writer.emit(event: "after", fields: [])
        #expect(writer.close(timeout: .seconds(10)))
        let lines = sink.lines
        #expect(lines.suffix(2).map { ParsedLine($0).event } == ["events.dropped", "after"])
        // Fixed-width RFC 3339 with microseconds: text order is time order.
        let times = lines.map { String($0.split(separator: #""time":""#)[1].prefix(27)) }
        let backwards = zip(times, times.dropFirst()).enumerated().filter { $0.element.1 < $0.element.0 }
        #expect(
            backwards.count == 0,
            """
            \(backwards.count) lines earlier than the one before, first: \
            \(backwards.first.map { "\($0.offset + 2): \($0.element)" } ?? "")
            """
        )
    }

    @Test("reopen reopens the sink on the writer's thread, and a pending report goes out then")
    func reopen() {
        let sink = ScriptedSink()
        let writer = EventWriterThread(sink: sink)
        sink.fail(with: EIO)
        writer.emit(event: "lost", fields: [])
        #expect(writer.flush(timeout: .seconds(10)))
        sink.fail(with: nil)
        writer.reopen()
        #expect(writer.close(timeout: .seconds(10)))
        #expect(sink.reopens == 1)
        #expect(
            sink.lines.map(ParsedLine.init) == [
                ParsedLine(seq: 1, event: "events.dropped", rest: #","count":1,"reason":"write_failed","error":"EIO"}"# + "\n")
            ])
    }

    @Test("flush gives up at its deadline while the output blocks; close ends the writer")
    func blockedOutput() {
        let sink = ScriptedSink(gated: true)
        let writer = EventWriterThread(sink: sink)
        writer.emit(event: "stuck", fields: [])
        sink.entered.wait()
        #expect(!writer.flush(timeout: .milliseconds(50)))
        sink.release()
        #expect(writer.flush(timeout: .seconds(10)))
        #expect(writer.close(timeout: .seconds(10)))
        #expect(!writer.emit(event: "late", fields: []))
        #expect(writer.statistics.accepted == 1)
    }

    @Test("A pipe whose reader is gone: lines are dropped and counted, the process lives")
    func closedPipe() {
        DescriptorSink.ignoreBrokenPipeSignal()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        close(fds[0])
        defer { close(fds[1]) }
        let writer = EventWriterThread(sink: DescriptorSink(descriptor: fds[1]))
        for _ in 0..<5 { writer.emit(event: "test.line", fields: []) }
        #expect(writer.close(timeout: .seconds(10)))
        #expect(writer.statistics == .init(accepted: 5, written: 0, droppedQueueFull: 0, droppedWriteFailed: 5))
    }

    @Test("Through a pipe to a reader, more than the pipe holds: every line arrives whole and in order")
    func pipeReader() async throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let reader = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        // A thread of its own: `close(timeout:)` below blocks this task's thread, and the concurrency pool
        // (two threads on a two-core machine, shared with other tests) may have no other one free.
        let received = ReceivedData()
        Thread { received.set(reader.readDataToEndOfFile()) }.start()
        let writer = EventWriterThread(sink: DescriptorSink(descriptor: fds[1]))
        let padding = String(repeating: "p", count: 100)
        for index in 0..<2000 { writer.emit(event: "test.pipe", fields: [("n", .int(index)), ("p", .string(padding))]) }
        #expect(writer.close(timeout: .seconds(30)))
        close(fds[1])
        let lines = String(decoding: received.wait(), as: UTF8.self).split(separator: "\n").map { ParsedLine($0 + "\n") }
        #expect(lines.map(\.seq) == Array(1...2000))
        #expect(lines.map(\.rest) == (0..<2000).map { #","n":\#($0),"p":"\#(padding)"}"# + "\n" })
        #expect(writer.statistics.written == 2000)
    }
}

/// Bytes handed from a reader thread to the test.
private final class ReceivedData: @unchecked Sendable {
    private let condition = NSCondition()
    private var data: Data?

    func set(_ value: Data) {
        condition.lock()
        data = value
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> Data {
        condition.lock()
        defer { condition.unlock() }
        while data == nil { condition.wait() }
        return data!
    }
}
