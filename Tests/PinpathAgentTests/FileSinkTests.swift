import Foundation
import PinpathSupport
import PinpathTestSupport
import Testing

@testable import PinpathAgent

@Suite("File sink")
struct FileSinkTests {
    /// Writes `text` through the sink, as the writer thread does.
    static func write(_ sink: some EventSink, _ text: String) throws {
        let failure = Array(text.utf8).withUnsafeBytes { bytes in
            Result { () throws(OutputError) in try sink.write(bytes) }
        }
        try failure.get()
    }

    static func mode(of path: String) -> mode_t {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    @Test("Rotation by size keeps N files, each of whole lines and no larger than the limit")
    func rotation() throws {
        let directory = try TemporaryDirectory()
        let sink = try FileSink(path: directory.file("pinpath.log"), maxBytes: 200, keptFiles: 2)
        let lines = (0..<15).map { "line \($0) " + String(repeating: "x", count: 40) + "\n" }  // 49 or 50 bytes
        for line in lines { try Self.write(sink, line) }
        let names = ["pinpath.log", "pinpath.log.1", "pinpath.log.2"]
        for name in names {
            let text = try #require(directory.read(name), "\(name)")
            #expect(text.utf8.count <= 200 && text.hasSuffix("\n"), "\(name)")
        }
        #expect(directory.read("pinpath.log.3") == nil)
        // The newest lines, oldest file first, are the tail of what was written.
        let kept = names.reversed().flatMap { directory.lines($0) }.map { String($0) + "\n" }
        #expect(kept == Array(lines.suffix(kept.count)))
        #expect(kept.count == 11)  // four lines a file: 4 + 4 + 3
        #expect(Self.mode(of: directory.file("pinpath.log")) == 0o640)
    }

    @Test("keptFiles 0 starts the file again when it is full")
    func noKeptFiles() throws {
        let directory = try TemporaryDirectory()
        let sink = try FileSink(path: directory.file("pinpath.log"), maxBytes: 10, keptFiles: 0)
        for line in ["aaaa\n", "bbbb\n", "cccc\n"] { try Self.write(sink, line) }
        #expect(directory.read("pinpath.log") == "cccc\n")
        #expect(directory.read("pinpath.log.1") == nil)
    }

    @Test("A file truncated by another program (logrotate's copytruncate) is not rotated early")
    func copyTruncate() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("pinpath.log")
        let sink = try FileSink(path: path, maxBytes: 100, keptFiles: 1)
        let line = String(repeating: "z", count: 79) + "\n"
        try Self.write(sink, line)
        #expect(truncate(path, 0) == 0)
        try Self.write(sink, line)
        #expect(directory.read("pinpath.log.1") == nil)
        #expect(directory.read("pinpath.log") == line)
        try Self.write(sink, line)
        #expect(directory.read("pinpath.log.1") == line)
    }

    @Test("After logrotate renames the file, reopen starts a new one; a deleted file is recreated")
    func reopen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("pinpath.log")
        let sink = try FileSink(path: path)
        try Self.write(sink, "one\n")
        #expect(rename(path, path + ".old") == 0)
        try Self.write(sink, "two\n")  // still the open file, as with any daemon before its signal
        try sink.reopen()
        try Self.write(sink, "three\n")
        #expect(directory.read("pinpath.log.old") == "one\ntwo\n")
        #expect(directory.read("pinpath.log") == "three\n")
        #expect(Self.mode(of: path) == 0o640)

        #expect(unlink(path) == 0)
        try sink.reopen()
        try Self.write(sink, "four\n")
        #expect(directory.read("pinpath.log") == "four\n")
    }

    @Test("A file deleted under the sink is created again before the next line, without reopen (SIGUSR1)")
    func deletedFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("pinpath.log")
        let sink = try FileSink(path: path, maxBytes: 100, keptFiles: 1)
        try Self.write(sink, "one\n")
        #expect(unlink(path) == 0)
        try Self.write(sink, "two\n")
        #expect(directory.read("pinpath.log") == "two\n")
        #expect(Self.mode(of: path) == 0o640)
        // The new file's size counts for rotation, not the deleted one's.
        let long = String(repeating: "l", count: 89) + "\n"
        try Self.write(sink, long)
        #expect(directory.read("pinpath.log") == "two\n" + long)
        #expect(directory.read("pinpath.log.1") == nil)
    }

    @Test("A file that cannot be opened is an error at start, naming it")
    func openFailure() {
        #expect { try FileSink(path: "/nonexistent-pinpath-directory/pinpath.log") } throws: { error in
            (error as? SystemCallError)?.errno == ENOENT
                && "\(error)" == "cannot open /nonexistent-pinpath-directory/pinpath.log: No such file or directory"
        }
    }

    @Test(
        "A full file system: no partial line, drops counted, recovery reported by events.dropped",
        .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullDisk() throws {
        let directory = try TemporaryDirectory()
        let mountPoint = directory.file("tmpfs")
        #expect(mkdir(mountPoint, 0o700) == 0)
        _ = try Shell.check(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint])
        // Lazy, so a descriptor still open (the sink's, if an expectation failed early) cannot keep it mounted.
        defer { _ = try? Shell.run(["umount", "-l", mountPoint]) }
        let filler = "\(mountPoint)/filler"
        let page = "\(mountPoint)/page"
        #expect(FileManager.default.createFile(atPath: filler, contents: Data(count: 16_384)))
        #expect(FileManager.default.createFile(atPath: page, contents: Data(count: 4_096)))

        let path = "\(mountPoint)/pinpath.log"
        let writer = EventWriterThread(sink: try FileSink(path: path))
        let padding = String(repeating: "x", count: 200)
        for index in 0..<400 { writer.emit(event: "test.fill", fields: [("n", .int(index)), ("padding", .string(padding))]) }
        #expect(writer.flush(timeout: .seconds(30)))
        let full = try #require(FileManager.default.contents(atPath: path))
        #expect(full.last == UInt8(ascii: "\n"))
        let filled = String(decoding: full, as: UTF8.self).split(separator: "\n").map { ParsedLine($0 + "\n") }
        #expect(filled.map(\.seq) == Array(1...filled.count))
        // A short events.dropped line may still fit where a long line did not: it counts what was lost so far.
        #expect(filled.allSatisfy { $0.event == "test.fill" ? $0.rest.hasSuffix(#"\#(padding)"}"# + "\n") : $0.event == "events.dropped" })
        let fillLines = filled.filter { $0.event == "test.fill" }.count
        #expect(fillLines > 100 && fillLines < 400)
        #expect(writer.statistics.droppedWriteFailed == 400 - fillLines)

        // A descriptor without O_APPEND (standard output redirected to a file): after a partial write, the
        // offset goes back too, so the next line does not follow a hole.
        #expect(unlink(page) == 0)
        let plain = open("\(mountPoint)/plain.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(plain >= 0)
        #expect(throws: OutputError.self) {
            try Self.write(DescriptorSink(descriptor: plain), String(repeating: "y", count: 5_000) + "\n")
        }
        #expect(lseek(plain, 0, SEEK_END) == 0)
        try Self.write(DescriptorSink(descriptor: plain), "short\n")
        #expect(lseek(plain, 0, SEEK_END) == 6)
        close(plain)
        #expect(unlink("\(mountPoint)/plain.log") == 0)

        #expect(unlink(filler) == 0)
        writer.emit(event: "test.after", fields: [])
        #expect(writer.close(timeout: .seconds(30)))
        let after = String(decoding: try #require(FileManager.default.contents(atPath: path)), as: UTF8.self)
        let all = after.split(separator: "\n").map { ParsedLine($0 + "\n") }
        #expect(all.map(\.seq) == Array(1...all.count))
        #expect(all.suffix(2).map(\.event) == ["events.dropped", "test.after"])
        #expect(all.suffix(2).first?.rest.hasSuffix(#","reason":"write_failed","error":"ENOSPC"}"# + "\n") == true)
        // Every line lost is counted once, by the reports.
        let reported = all.filter { $0.event == "events.dropped" }.map {
            Int($0.rest.dropFirst(#","count":"#.count).prefix { $0.isNumber })!
        }
        #expect(reported.reduce(0, +) == 400 - fillLines)
        #expect(writer.statistics.droppedWriteFailed == 400 - fillLines)
    }
}
