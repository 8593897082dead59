import Glibc
import PinpathSupport

/// Where an ``EventWriterThread`` puts its lines: standard output (``DescriptorSink``) or a file
/// (``FileSink``).
///
/// A sink is used from the writer's own thread only, so it needs no locking and need not be `Sendable`.
package protocol EventSink: AnyObject {
    /// Writes one line, newline included, in one `write(2)` where the output allows.
    ///
    /// Either the whole line stays in the output or, as far as the sink can undo it, none of it.
    /// - Throws: `OutputError` with the errno (EPIPE, ENOSPC, …); the writer counts the line as dropped.
    func write(_ line: UnsafeRawBufferPointer) throws(OutputError)

    /// Closes and opens the output again by name (SIGUSR1, after logrotate moved the file away).
    /// - Throws: `OutputError` when it cannot be opened; the next write tries again.
    func reopen() throws(OutputError)
}

/// A descriptor the agent did not open, standard output by default (journald, a pipe, a file from the
/// service manager). Writes that fail return EPIPE rather than killing the process: the agent ignores
/// SIGPIPE (``ignoreBrokenPipeSignal()``).
package final class DescriptorSink: EventSink {
    private let output: LineOutput

    /// - Parameter descriptor: the descriptor written to; standard output by default. Not closed here.
    package init(descriptor: Int32 = STDOUT_FILENO) {
        output = LineOutput(descriptor: descriptor)
    }

    /// Writes the line; on a regular file, a partial line left by a failed write is cut back out.
    package func write(_ line: UnsafeRawBufferPointer) throws(OutputError) {
        try output.writeWholeLine(line)
    }

    /// Nothing to reopen: the descriptor has no name of ours.
    package func reopen() throws(OutputError) {}

    /// Sets SIGPIPE to be ignored for the whole process, so a write to a closed pipe fails with EPIPE (which
    /// the writer counts) instead of ending the process. Call once at start-up.
    package static func ignoreBrokenPipeSignal() {
        signal(SIGPIPE, SIG_IGN)
    }
}

extension LineOutput {
    /// Writes `line` whole, or leaves none of it in a seekable output.
    ///
    /// A write can stop part-way (ENOSPC with room for half a line). A pipe cannot take bytes back, and its
    /// reader is usually gone when that happens (EPIPE); a regular file can: the file is truncated back to
    /// where the line started, and the offset moved there too, for files opened without `O_APPEND`.
    func writeWholeLine(_ line: UnsafeRawBufferPointer) throws(OutputError) {
        do {
            try write(line)
        } catch {
            if error.bytesWritten > 0 {
                let end = lseek(descriptor, 0, SEEK_CUR)
                // lseek fails with ESPIPE on pipes and sockets: nothing can be taken back there.
                if end >= 0 {
                    let start = end - off_t(error.bytesWritten)
                    _ = ftruncate(descriptor, start)
                    _ = lseek(descriptor, start, SEEK_SET)
                }
            }
            throw error
        }
    }
}
