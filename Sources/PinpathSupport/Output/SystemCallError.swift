import Glibc

/// A system call on a named file or socket failed: opening an event file, writing the metrics textfile,
/// sending to systemd.
package struct SystemCallError: Error, Sendable, CustomStringConvertible {
    /// What was being done, as a verb phrase (`open`, `rename into place`, `send to`).
    package let operation: String
    /// The file or socket it was done to.
    package let path: String
    /// The errno of the failed call.
    package let errno: Int32

    /// - Parameters:
    ///   - operation: what was being done (`open`).
    ///   - path: the file or socket.
    ///   - errno: why it failed.
    package init(_ operation: String, _ path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// `cannot open /var/log/pinpath.log: Permission denied`.
    package var description: String {
        // O_NOFOLLOW reports a link as ELOOP, whose text ("Too many levels of symbolic links") misleads.
        // ENXIO is what the event file's open says of a FIFO, a device or a socket in the file's place.
        let reason =
            switch errno {
            case ELOOP: "it is a symbolic link, and pinpath does not write through links (name the real file)"
            case ENXIO: "it is not a regular file (a FIFO, a device or a socket), and pinpath writes events only to files"
            default: String(cString: strerror(errno))
            }
        return "cannot \(operation) \(path): \(reason)"
    }
}
