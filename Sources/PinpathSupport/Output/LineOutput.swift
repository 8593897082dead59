import Glibc

/// A file descriptor that takes whole lines: each goes out in one `write(2)` (retried on EINTR and short
/// writes), unbuffered, so a line is visible to a reader as soon as it is written.
package struct LineOutput: Sendable {
    /// The descriptor written to.
    package let descriptor: Int32

    /// - Parameter descriptor: standard output by default. Not closed here.
    package init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
    }

    /// Writes `line`, which should end with a newline.
    /// - Throws: `OutputError` with the errno of the failed `write(2)`.
    package func write(_ line: String) throws(OutputError) {
        var line = line
        // withUTF8 rethrows untyped errors: carry the typed one out as a value.
        let failure = line.withUTF8 { bytes in Result { () throws(OutputError) in try write(UnsafeRawBufferPointer(bytes)) } }
        try failure.get()
    }

    /// Writes `bytes` whole; see ``write(_:)-(UnsafeRawBufferPointer)``.
    package func write(_ bytes: [UInt8]) throws(OutputError) {
        let failure = bytes.withUnsafeBytes { bytes in Result { () throws(OutputError) in try write(bytes) } }
        try failure.get()
    }

    /// Writes `bytes` whole, unless `write(2)` fails: then the error says why and part of them may have been
    /// written (the agent's file sink takes such a part back out of its file).
    /// - Throws: `OutputError` with the errno of the failed `write(2)` and how many bytes did go out.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(OutputError) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw OutputError(errno: errno, bytesWritten: offset)
            }
            offset += written
        }
    }
}
